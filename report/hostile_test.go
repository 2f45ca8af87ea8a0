package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileStem: names derived from user data map to stems that stay in
// their directory, by the stated rule (hand-written cases).
func TestFileStem(t *testing.T) {
	for in, want := range map[string]string{
		"fig7a-gpt2-xl":         "fig7a-gpt2-xl",
		"fig7a-../../evil":      "fig7a-.._.._evil",
		"../../evil":            "_.._.._evil",
		"..":                    "_..",
		"":                      "_",
		"a/b":                   "a_b",
		"x\x00y\nz":             "x_y_z",
		"m\u00e9":               "m__", // two UTF-8 bytes
		"ResNet-18+ef v2.1_a":   "ResNet-18+ef_v2.1_a",
		".hidden":               "_.hidden",
		"fig7a-\x1b[31mred":     "fig7a-__31mred",
		"C:\\windows\\system32": "C__windows_system32",
	} {
		if got := FileStem(in); got != want {
			t.Errorf("FileStem(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestWriteFilesStaysInDir: a figure named after a hostile model name is
// written inside the directory, under the name Markdown links, and the
// Markdown carries no raw HTML from the data.
func TestWriteFilesStaysInDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	r := &Result{Block: "collective", Title: "<script>alert(1)</script>",
		Summary: []string{"model <img src=x onerror=alert(1)> & co"},
		Tables:  []Table{{Name: "t", Title: "<b>t</b>", Columns: []string{"<i>c</i>"}, Rows: [][]string{{"<script>x</script>|y"}}, Notes: []string{"<a href=javascript:x>n</a>"}}},
		Figures: []Figure{{Name: "fig7a-../../evil", Title: "<svg onload=x>", SVG: []byte("<svg/>")}, {Name: "fig7a-a/b", SVG: []byte("<svg/>")}}}
	paths, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if filepath.Dir(p) != dir {
			t.Errorf("wrote %s outside %s", p, dir)
		}
	}
	for _, name := range []string{"fig7a-.._.._evil.svg", "fig7a-a_b.svg", "collective.md", "collective.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("%d entries in %s; want only a/", len(ents), root)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "collective.md"))
	for _, bad := range []string{"<script", "<img", "<b>", "<i>", "<a ", "<svg"} {
		if strings.Contains(string(md), bad) {
			t.Errorf("Markdown holds raw %q:\n%s", bad, md)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&amp; co", `&lt;script&gt;x&lt;/script&gt;\|y`, "(fig7a-.._.._evil.svg)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}
