// Package strictyaml holds the one check that yaml.v3 lacks for this
// project's configuration files: a float where the target field is an
// integer is an error, not a silent truncation (yaml.v3 decodes 2.9 into
// an int as 2).
package strictyaml

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// CheckInts walks the YAML tree n alongside the Go type t (as decoded with
// yaml tags) and returns an error naming the first integer field, by its
// YAML path (e.g. "layers[0].tensors[1].shape[0]"), that holds a float.
// Pointers, slices, arrays, maps and nested structs are followed.
func CheckInts(n *yaml.Node, t reflect.Type) error {
	return check(n, t, "")
}

// CheckIntsIn parses data and checks it against the type of v (a pointer
// or a value); a document that does not parse is left to the decoder.
func CheckIntsIn(data []byte, v any) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil
	}
	return CheckInts(&root, reflect.TypeOf(v))
}

func check(n *yaml.Node, t reflect.Type, path string) error {
	if n == nil || t == nil {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := check(c, t, path); err != nil {
				return err
			}
		}
		return nil
	case yaml.AliasNode:
		return check(n.Alias, t, path)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, ok := fieldByYAMLName(t, n.Content[i].Value); ok {
				if err := check(n.Content[i+1], f.Type, join(path, n.Content[i].Value)); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := check(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, c := range n.Content {
			if err := check(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" {
			return fmt.Errorf("%s: must be an integer, got %s", path, n.Value)
		}
	}
	return nil
}

// fieldByYAMLName finds the struct field that yaml.v3 decodes key into,
// looking into inlined structs.
func fieldByYAMLName(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if g, ok := fieldByYAMLName(ft, key); ok {
					return g, true
				}
			}
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
