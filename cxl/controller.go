package cxl

import (
	"fmt"
	"sync"
)

// Controller is a Core behind a mutex: many writer goroutines (one per
// worker, say) and a control goroutine may use one Controller at once.
// Each call is atomic, so a transaction issued through Do is accepted and
// completed with no other transaction or mode change in between; the
// order between goroutines is whatever the mutex gives.
type Controller struct {
	mu   sync.Mutex
	core *Core
}

// New returns a controller with no regions.
func New(cfg Config) (*Controller, error) {
	c, err := NewCore(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{core: c}, nil
}

// Do runs one transaction to completion; the error is resp.Err.
func (c *Controller) Do(req Req) (Resp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Do(req)
}

// DoBatch runs the transactions in order under one lock acquisition,
// writing response i to out[i] (out must be as long as reqs). It returns
// the number of failed transactions.
func (c *Controller) DoBatch(reqs []Req, out []Resp) (failed int) {
	if len(out) < len(reqs) {
		panic(fmt.Sprintf("cxl: DoBatch: %d responses for %d requests", len(out), len(reqs)))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, r := range reqs {
		var err error
		out[i], err = c.core.Do(r)
		if err != nil {
			failed++
		}
	}
	return failed
}

// ReadLine reads the line at addr.
func (c *Controller) ReadLine(tag uint16, addr uint64) (Resp, error) {
	return c.Do(Read(tag, addr))
}

// WriteLine writes one line at addr.
func (c *Controller) WriteLine(tag uint16, addr uint64, data []byte) (Resp, error) {
	return c.Do(Write(tag, addr, data))
}

// Map adds a region (see Core.Map).
func (c *Controller) Map(r Region) (RegionID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Map(r)
}

// Unmap removes a region (see Core.Unmap).
func (c *Controller) Unmap(id RegionID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Unmap(id)
}

// Region returns a region's table row with its current mode.
func (c *Controller) Region(id RegionID) (Region, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Region(id)
}

// SetMode writes a region's mode latch (see Core.SetMode).
func (c *Controller) SetMode(id RegionID, m Mode, ts int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.SetMode(id, m, ts)
}

// Mode returns a region's current mode.
func (c *Controller) Mode(id RegionID) (Mode, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Mode(id)
}

// ModeChanges returns a copy of the mode-change log.
func (c *Controller) ModeChanges() []ModeChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.ModeChanges()
}

// Stats returns a copy of the counters.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Stats()
}

// Peek returns stored bytes without a transaction (see Core.Peek).
func (c *Controller) Peek(addr uint64) (Line, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Peek(addr)
}

// StoredLines returns the addresses of every line ever written, sorted.
func (c *Controller) StoredLines() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.StoredLines()
}
