package field

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Preset returns the base a YAML block decodes over: current when the
// mapping n names no preset (no "preset" key), else lookup of the name it
// names, whose error is returned with the key's line.
func Preset[T any](n *yaml.Node, current T, lookup func(string) (T, error)) (T, error) {
	if n == nil || n.Kind != yaml.MappingNode {
		return current, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Value == "preset" && n.Content[i+1].Value != "" {
			p, err := lookup(n.Content[i+1].Value)
			if err != nil {
				return current, fmt.Errorf("line %d: preset: %w", k.Line, err)
			}
			return p, nil
		}
	}
	return current, nil
}

// Decode decodes the YAML mapping n into dst (a pointer to a struct,
// usually a method-less copy of the type whose UnmarshalYAML calls Decode)
// over its current value, so the keys n leaves out keep it. A key that
// names no field of dst's type, at this level or in a nested struct that
// does not decode itself, is an error naming it and its line: yaml.v3
// drops KnownFields inside custom unmarshalers, so Decode checks keys
// itself.
func Decode(n *yaml.Node, dst any) error {
	if err := knownKeys(n, reflect.TypeOf(dst).Elem(), ""); err != nil {
		return err
	}
	return n.Decode(dst)
}

var unmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

func knownKeys(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct {
		return nil
	}
	keys := map[string]reflect.Type{}
	for i := range t.NumField() {
		if k := yamlKey(t.Field(i)); k != "" && t.Field(i).IsExported() {
			keys[k] = t.Field(i).Type
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		ft, ok := keys[k]
		if !ok {
			names := make([]string, 0, len(keys))
			for name := range keys {
				names = append(names, name)
			}
			sort.Strings(names)
			return fmt.Errorf("line %d: field %s%s not found (want one of %s)", n.Content[i].Line, path, k, strings.Join(names, ", "))
		}
		if ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(unmarshaler) {
			if err := knownKeys(n.Content[i+1], ft, path+k+"."); err != nil {
				return err
			}
		}
	}
	return nil
}
