package dram

import (
	"github.com/neuronfabric/nfabric/timing/internal/field"
	"gopkg.in/yaml.v3"
)

// UnmarshalYAML decodes a DRAM block: a block that names a preset
// ("preset: ddr5-6400") starts from that speed grade and its other keys
// override it; one that names none overrides the spec already there (the
// default, or the device preset's media). Unknown keys are errors.
func (d *Spec) UnmarshalYAML(n *yaml.Node) error {
	type plain Spec
	base, err := field.Preset(n, *d, Preset)
	if err != nil {
		return err
	}
	v := plain(base)
	if err := field.Decode(n, &v); err != nil {
		return err
	}
	*d = Spec(v)
	return nil
}
