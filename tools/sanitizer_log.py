#!/usr/bin/env python3
"""Reads a compute-sanitizer log and counts its errors, leaving out the API errors a chapter's
grading manifest allows (tools/grading/<chapter>.json, "sanitize_allowed_api_errors").

    tools/sanitizer_log.py LOG --chapter 11_multi_gpu     # exit 0: no error left; 1: errors left
    tools/sanitizer_log.py LOG --allow cudaFuncGetAttributes:cudaErrorNoKernelImageForDevice:libnccl

A command shim: the code, and why the filter exists, are in tools/coursetools/sanitizer.py
(`--help` prints it all).
"""
import sys

from coursetools.sanitizer import Allowed, Report, count, main, manifest_allowed, parse  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
