"""The backends that run a scenario: the Rust model (`model`) and real go-libp2p nodes
(`testbed`), with the parameter translation they share (`params`)."""
