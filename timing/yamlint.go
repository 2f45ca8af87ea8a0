package timing

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// checkIntFields rejects a YAML float where the target field is an
// integer (yaml.v3 would otherwise truncate 2.5 to 2 without a word),
// naming the field by its YAML path.
func checkIntFields(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			if err := checkIntFields(c, t, path); err != nil {
				return err
			}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			for j := 0; j < t.NumField(); j++ {
				f := t.Field(j)
				if strings.Split(f.Tag.Get("yaml"), ",")[0] == key {
					if err := checkIntFields(n.Content[i+1], f.Type, join(path, key)); err != nil {
						return err
					}
				}
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, c := range n.Content {
			if err := checkIntFields(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
			return fmt.Errorf("%s: must be an integer, got %s", path, n.Value)
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
