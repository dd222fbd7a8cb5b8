"""What the tests and bench/ share: projects on disk, servers started and talked to, waits with a
deadline, the peers' doubles (tests/peers holds the peers themselves). Imported as `tests.helpers.*`."""
