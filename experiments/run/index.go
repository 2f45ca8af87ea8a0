package run

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/neuronfabric/nfabric/report"
)

// Ledger gathers every block's claims in report order: the rows of the
// claims ledger that REPORT.md, index.html and ledger.json open with. A
// failed block contributes its claims as not run (Outcome.NotRun).
func Ledger(outs []Outcome) []report.Claim {
	var out []report.Claim
	for _, o := range outs {
		switch {
		case o.Err != nil:
			out = append(out, o.NotRun...)
		case o.Result != nil:
			out = append(out, o.Result.Claims...)
		}
	}
	return out
}

// writeOutcome writes a laid-out block's files into outDir.
func writeOutcome(o Outcome, outDir string) Outcome {
	if o.Err == nil && o.Result != nil {
		o.Files, o.Err = o.Result.WriteFiles(outDir)
	}
	return o
}

// writeIndex writes REPORT.md and index.html and summarises the failed
// blocks.
func writeIndex(outs []Outcome, cfg Config, outDir string) error {
	ledger, err := LedgerJSON(outs)
	if err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(outDir, "ledger.json"), ledger); err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(outDir, "REPORT.md"), []byte(Index(outs, cfg))); err != nil {
		return err
	}
	page, err := IndexHTML(outs, cfg)
	if err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(outDir, "index.html"), page); err != nil {
		return err
	}
	var failed []string
	for _, o := range outs {
		if o.Err != nil {
			failed = append(failed, o.Block.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d block(s) failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// BlockStatus is a block's status word ("ok" or "failed") and its detail
// (the error, the check counts): the one source of REPORT.md's status
// column and index.html's status badges, so a status the block's result
// carries plugs in here for both.
func BlockStatus(o Outcome) (status, detail string) {
	switch {
	case o.Err != nil:
		return "failed", o.Err.Error()
	case o.Result != nil && o.Result.Failed > 0:
		return "failed", fmt.Sprintf("%d passed, %d failed", o.Result.Passed, o.Result.Failed)
	case o.Result != nil && (o.Result.Status == report.StatusSkipped || o.Result.Status == report.StatusPartial):
		return o.Result.Status, strings.Join(o.Result.Skipped, "; ")
	case o.Result != nil && len(o.Result.Skipped) > 0:
		return report.StatusPartial, strings.Join(o.Result.Skipped, "; ")
	}
	return report.StatusOK, ""
}

// FailedBlocks returns an error naming every outcome whose BlockStatus is
// "failed" (an error or failed checks), nil when none is: a run whose
// report records a failure must not exit as a success.
func FailedBlocks(outs []Outcome) error {
	var failed []string
	for _, o := range outs {
		if st, detail := BlockStatus(o); st == "failed" {
			failed = append(failed, o.Block.Name+" ("+detail+")")
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d blocks failed: %s", len(failed), len(outs), strings.Join(failed, "; "))
}

// markdownStatus is BlockStatus as REPORT.md's status column and the
// progress lines print it.
func markdownStatus(o Outcome) string {
	st, detail := BlockStatus(o)
	switch {
	case detail == "":
		return st
	case o.Err != nil:
		return strings.ToUpper(st) + ": " + detail
	case st == "failed":
		return detail
	}
	return st + ": " + detail
}

func indexIntro(cfg Config) string {
	return fmt.Sprintf("Configuration: %s, seed %d. Every figure in a column not labelled \"paper\" was computed by this run.", cfg.Tier, cfg.Seed)
}

const indexTitle = "NEURON-Fabric reproduction report"

// blockFiles are the block's own files the indexes link.
func blockFiles(o Outcome) []string {
	if o.Err != nil {
		return nil
	}
	return []string{o.Block.Name + ".md", o.Block.Name + ".json"}
}

// LedgerJSON is ledger.json: the claims ledger's rows as indented JSON,
// the same rows REPORT.md and index.html open with.
func LedgerJSON(outs []Outcome) ([]byte, error) {
	rows := Ledger(outs)
	if rows == nil {
		rows = []report.Claim{}
	}
	b, err := json.MarshalIndent(struct {
		Claims []report.Claim `json:"claims"`
	}{rows}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode ledger.json: %w", err)
	}
	return append(b, '\n'), nil
}

// Index renders REPORT.md: the claims ledger (each row linking to its
// block's file), one line per block with its status and links, then each
// block's Markdown in full. It holds no wall-clock times so that the same
// seed gives the same bytes.
func Index(outs []Outcome, cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", indexTitle, indexIntro(cfg))
	if ledger := Ledger(outs); len(ledger) > 0 {
		t := report.LedgerTable(ledger, func(block string) string { return fmt.Sprintf("[%s](%s.md)", block, block) })
		t.Title = ""
		fmt.Fprintf(&b, "## Claims ledger\n\n%s\n\n%s\n", report.LedgerSummary(ledger), t.Markdown())
		b.WriteString("## Blocks\n\n")
	}
	b.WriteString("| block | evidence | status | files |\n| --- | --- | --- | --- |\n")
	for _, o := range outs {
		status := strings.ReplaceAll(report.EscapeMarkdown(markdownStatus(o)), "|", `\|`)
		var links []string
		for _, f := range blockFiles(o) {
			links = append(links, fmt.Sprintf("[%s](%s)", f, f))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", o.Block.Name, report.EscapeMarkdown(o.Block.Title), status, strings.Join(links, ", "))
	}
	b.WriteString("\n")
	for _, o := range outs {
		if o.Err == nil && o.Result != nil {
			b.WriteString(o.Result.Markdown())
		}
	}
	return b.String()
}

// IndexHTML renders index.html from the same outcomes as Index: the whole
// report on one self-contained page (see report.Page).
func IndexHTML(outs []Outcome, cfg Config) ([]byte, error) {
	p := report.Page{Title: indexTitle, Intro: []string{indexIntro(cfg), "Open REPORT.md for the same report in Markdown; each block's files are linked from its section."}, Ledger: Ledger(outs)}
	for _, o := range outs {
		st, detail := BlockStatus(o)
		pb := report.PageBlock{Name: o.Block.Name, Title: o.Block.Title, Status: st, Detail: detail, Files: blockFiles(o)}
		if o.Err == nil {
			pb.Result = o.Result
			if o.Result != nil && o.Result.Title != "" {
				pb.Title = o.Result.Title
			}
		}
		p.Blocks = append(p.Blocks, pb)
	}
	return p.HTML()
}
