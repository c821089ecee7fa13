"""Packaging detail pyproject.toml cannot say: ship the repository's ``configs/`` folder as
the package data ``ascend_ref/configs/`` (chip profiles, fuzz campaigns, golden kernels),
which ``ascend_ref.chips.config_dir`` finds through ``importlib.resources`` in an installed
wheel, and the ``py.typed`` marker. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

CONFIG_DIRS = ("chips", "campaigns", "kernels")

setup(
    packages=find_packages(include=["ascend_ref", "ascend_ref.*"])
    + ["ascend_ref.configs"] + [f"ascend_ref.configs.{d}" for d in CONFIG_DIRS],
    package_dir={"ascend_ref.configs": "configs",
                 **{f"ascend_ref.configs.{d}": f"configs/{d}" for d in CONFIG_DIRS}},
    # py.typed (PEP 561): the package's own annotations are its types for a user's checker
    package_data={"ascend_ref": ["py.typed"],
                  **{f"ascend_ref.configs.{d}": ["*.toml"] for d in CONFIG_DIRS}},
)
