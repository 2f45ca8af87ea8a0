package field

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/pflag"
)

// Flags is one command-line flag per YAML key of a configuration struct:
// the flag --PREFIX-KEY (KEY with '-' for '_') defaults to the key's
// value in the struct Bind was given and, when the user sets it,
// overrides the key in the struct Apply is given.
type Flags struct {
	names []string
	index [][]int
	vals  []any
}

// Bind registers a flag for each field of def (a pointer to a struct) whose
// YAML key has an entry in help, the flag's usage text. Fields of kind
// int, uint64, float64, string and bool are supported; any other kind
// with a help entry panics (a programming error).
func Bind(fs *pflag.FlagSet, prefix string, def any, help map[string]string) *Flags {
	v := reflect.ValueOf(def).Elem()
	t := v.Type()
	b := &Flags{}
	seen := 0
	for i := range t.NumField() {
		key := yamlKey(t.Field(i))
		h, ok := help[key]
		if !ok {
			continue
		}
		seen++
		name := prefix + strings.ReplaceAll(key, "_", "-")
		f := v.Field(i)
		var p any
		switch f.Kind() {
		case reflect.Int:
			p = fs.Int(name, int(f.Int()), h)
		case reflect.Uint64:
			p = fs.Uint64(name, f.Uint(), h)
		case reflect.Float64:
			p = fs.Float64(name, f.Float(), h)
		case reflect.String:
			p = fs.String(name, f.String(), h)
		case reflect.Bool:
			p = fs.Bool(name, f.Bool(), h)
		default:
			panic(fmt.Sprintf("field: %s.%s: a flag of kind %v", t.Name(), key, f.Kind()))
		}
		b.names, b.index, b.vals = append(b.names, name), append(b.index, []int{i}), append(b.vals, p)
	}
	if seen != len(help) {
		panic(fmt.Sprintf("field: %d help entries for %s, %d of them keys", len(help), t.Name(), seen))
	}
	return b
}

// Apply sets on dst (a pointer to the struct type Bind was given) the
// value of every bound flag the user set, and returns the flags' names
// ("--PREFIX-KEY") in field order.
func (b *Flags) Apply(fs *pflag.FlagSet, dst any) []string {
	v := reflect.ValueOf(dst).Elem()
	var set []string
	for i, name := range b.names {
		if !fs.Changed(name) {
			continue
		}
		set = append(set, "--"+name)
		v.FieldByIndex(b.index[i]).Set(reflect.ValueOf(b.vals[i]).Elem())
	}
	return set
}

// yamlKey returns the field's YAML key (its tag up to a comma), "" when
// it has none or is skipped ("-").
func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" {
		return ""
	}
	return k
}
