"""ISO 9660 images for the CD-ROM tests, made with genisoimage."""

import shutil
import subprocess

import pytest


def make(directory, name, files):
    """directory/NAME.iso holding files ({file name: bytes}), Rock Ridge and
    Joliet as a distribution's disc has; a skip where genisoimage is missing."""
    genisoimage = shutil.which("genisoimage") or shutil.which("mkisofs")
    if not genisoimage:
        pytest.skip("genisoimage is not installed (apt-get install genisoimage)")
    tree = directory / f"{name}-tree"
    tree.mkdir(parents=True)
    for file_name, data in files.items():
        (tree / file_name).write_bytes(data)
    image = directory / f"{name}.iso"
    subprocess.run([genisoimage, "-quiet", "-r", "-J", "-o", str(image), str(tree)], check=True)
    return image
