package workload

import (
	"fmt"
	"strings"
)

// Provenance says what a trace reader read and what it left out, so that
// every command that prices a trace can say it (text and JSON): the file
// form, the files, tallies of what was read, and of what was ignored or
// not priced, each with why.
type Provenance struct {
	Format  string   `json:"format"`
	Files   []string `json:"files"`
	Read    []Tally  `json:"read"`
	Ignored []Tally  `json:"ignored,omitempty"`
}

// Tally counts one kind of thing in a trace.
type Tally struct {
	What string `json:"what"`
	N    int64  `json:"n"`
	// Why says what became of them (for ignored tallies).
	Why string `json:"why,omitempty"`
}

// ReadLine summarises what was read: "3664 nodes, 3643 COMP_NODE, ...".
func (p *Provenance) ReadLine() string {
	if p == nil {
		return ""
	}
	parts := make([]string, len(p.Read))
	for i, t := range p.Read {
		parts[i] = fmt.Sprintf("%d %s", t.N, t.What)
	}
	return strings.Join(parts, ", ")
}

// Lines renders the provenance as sentences for a summary: the form and
// files, what was read, and one line per ignored tally.
func (p *Provenance) Lines() []string {
	if p == nil {
		return nil
	}
	files := strings.Join(p.Files, ", ")
	if len(p.Files) > 4 {
		files = fmt.Sprintf("%s ... %s (%d files)", p.Files[0], p.Files[len(p.Files)-1], len(p.Files))
	}
	out := []string{fmt.Sprintf("Trace: %s, %s; read %s.", p.Format, files, p.ReadLine())}
	for _, t := range p.Ignored {
		out = append(out, fmt.Sprintf("Trace: %d %s: %s.", t.N, strings.TrimSpace(t.What), t.Why))
	}
	return out
}
