"""Versions sort as releases do; a record with no torch version sorts first, never crashes;
an installed version is read as importlib.metadata reads it."""

from importlib import metadata

from coursebook.model.versions import installed_version, version_key


def test_releases_sort_numerically_and_a_museum_capture_without_a_version_first():
    # The museum's TPU captures say torch = "unrecorded"; the torch-versions page sorts them
    # with the build's records (it crashed the build with InvalidVersion).
    assert sorted(["2.13.0", "unrecorded", "2.9.0"], key=version_key) == [
        "unrecorded", "2.9.0", "2.13.0"]


def test_an_installed_version_is_importlib_metadatas_for_every_installed_package():
    names = {found.metadata["Name"] for found in metadata.distributions()}
    assert len(names) > 20  # the book's environment
    assert {name: installed_version(name) for name in names} == {
        name: metadata.version(name) for name in names}
