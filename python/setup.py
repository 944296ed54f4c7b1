"""The wheel carries liblance_host.so, so it is platform specific (not a pure-Python wheel)."""

from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution)
