"""Build hook: the wheel carries conf/ and examples/ inside the package (harness/_shipped/).

conf/ stays at the top level of the repository (the design card fixes it); an installed
harness finds it as ``harness/_shipped/conf`` (see :mod:`harness.core.shipped`). An editable
install reads the checkout's own folders, so nothing is copied then.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("conf", "examples")  # folders of the checkout copied into harness/_shipped/


class BuildWithShipped(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        here = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "harness" / "_shipped"
        for name in SHIPPED:
            dest = target / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(here / name, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithShipped})
