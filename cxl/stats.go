package cxl

// ModeStats counts one mode's traffic. A transaction counts under the mode
// it was accepted with; plain memory outside every region counts as
// Identity.
type ModeStats struct {
	// ReadLines and WriteLines count successful MemRd and MemWr
	// transactions (one line each).
	ReadLines  uint64 `json:"read_lines"`
	WriteLines uint64 `json:"write_lines"`
	// TransformedLines counts reads answered with an aggregate instead of
	// stored bytes.
	TransformedLines uint64 `json:"transformed_lines"`
	// ReadBytes and WriteBytes are the data payload bytes on the link:
	// 64 per line.
	ReadBytes  uint64 `json:"read_bytes"`
	WriteBytes uint64 `json:"write_bytes"`
	// MediaLinesRead counts lines fetched from storage to serve the
	// reads: 1 per untransformed read; per aggregate response line, 1 (2
	// with gate bits) element-major and W (2W) worker-major; in the
	// integer-sum modes W per INT8 view line, 2W per BFP8 sum view line
	// (codes and exponents) and W per exponent view line. Both lines
	// of a worker-major aggregate count their fetches, as in a controller
	// without a result buffer; the model itself reduces once for the pair.
	MediaLinesRead uint64 `json:"media_lines_read"`
}

// Stats are the controller's counters. They are cumulative since New.
type Stats struct {
	// Transactions is the number of requests accepted (the last Seq).
	Transactions uint64 `json:"transactions"`
	// Completed is the number of responses produced.
	Completed uint64 `json:"completed"`
	// Modes is indexed by Mode: identity, fp32-bypass, then the aggregate
	// of each format in lowbit's registry order (g-binary, g-ternary,
	// int8, bfp8): an array in that order in JSON.
	Modes [NumModes]ModeStats `json:"modes"`
	// Errors counts failed transactions by kind, indexed like ErrKinds.
	Errors [numErrKinds]uint64 `json:"errors"`
	// ModeChanges counts mode-latch changes (writes of the same mode are
	// not changes).
	ModeChanges uint64 `json:"mode_changes"`
}

const numErrKinds = 6

// TotalErrors returns the number of failed transactions.
func (s *Stats) TotalErrors() uint64 {
	var n uint64
	for _, e := range s.Errors {
		n += e
	}
	return n
}

// ModeChange records one change of a region's mode latch, for the control
// plane. The change applies to transactions with Seq > AfterSeq.
type ModeChange struct {
	Region   RegionID `json:"region"`
	From     Mode     `json:"from"`
	To       Mode     `json:"to"`
	AfterSeq uint64   `json:"after_seq"`
	// Time is the caller's timestamp (any unit, e.g. a control step);
	// AfterSeq is the model's own logical time.
	Time int64 `json:"time"`
}
