"""Golden files: fixed-seed records checked in and diffed by the tests."""
