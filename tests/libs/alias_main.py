"""Calls each alias of libmxalias once, through the mxcaller extension (its PLT)."""
import sys

import mxcaller


def call(name: str) -> int:
    return mxcaller.call(name, 5)  # @py_call


for name in sys.argv[1:] or ["mx_create", "mx_alias", "mx_gi", "mx_gi_user", "mx_static_user", "mx_wrapper"]:
    print(name, call(name))
