"""Versions sort as releases do; a record with no torch version sorts first, never crashes."""

from coursebook.model.versions import version_key


def test_releases_sort_numerically_and_a_museum_capture_without_a_version_first():
    # The museum's TPU captures say torch = "unrecorded"; the torch-versions page sorts them
    # with the build's records (it crashed the build with InvalidVersion).
    assert sorted(["2.13.0", "unrecorded", "2.9.0"], key=version_key) == [
        "unrecorded", "2.9.0", "2.13.0"]
