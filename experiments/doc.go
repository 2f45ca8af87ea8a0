// Package experiments holds the paper's evidence blocks (its Table 3).
// Each block is one file that lists its units and lays out their results
// (payload.go, functional.go, timing.go, replay.go, collective.go,
// netcheck.go, training.go, control.go, hardware.go) plus its claims file
// (payload_claims.go, ...), which turns the results into the rows of the
// claims ledger; a few large blocks split their layout or their
// configurations into further files named after the block (timing_ddr5.go,
// hardware_tables.go, control_ns3.go, ...). Every block registers itself
// with the framework in package experiments/run, which runs, shards,
// merges and writes them; `nfabric reproduce` runs the registered blocks,
// and the per-topic commands (`nfabric verify`, `nfabric timing`, ...)
// call the same block functions with user-chosen parameters. See package
// run for how a block is written.
//
// Paper figures appear here only as constants feeding columns labelled
// "paper"; every other figure comes from the domain packages.
package experiments
