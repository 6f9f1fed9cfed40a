package proto

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
	"time"

	"v6lab/internal/input/specfile"
)

// An options struct names its options with tags, read by the experiment
// file's decoder (specfile.Doc.DecodeRest) and by the commands' flags
// (Fields): one place per option.
//
//	Objects *int   `opt:"objects,fileonly" usage:"…"`
//	Engine  string `opt:"engine,flagonly,default=auto" usage:"…"`
//	Servers []string `opt:"dns_servers,flag=server" usage:"…"`
//
// The tag opt is the option's name in experiment files (and, by its json
// tag, in results), then any of: fileonly (no flag), flagonly (no key in
// files: a probe command's own setting), flag=NAME (the flag's name when
// not the option's with - for _), short=X, default=TEXT (the flag's
// default, set when the flag is not given), secret (a value other than
// the default is used, never written: results record it as xxxxx).
// usage is the flag's help.
// Embedded structs lend their fields (Common, Named).

// Field is one option of an options struct.
type Field struct {
	// Name is the option's name in files and results (tls_resume).
	Name string
	// Flag is its flag's name (tls-resume; "" when it has none), Short
	// its one-letter form, Usage its help and Default the text it is set
	// from when the flag is not given.
	Flag, Short, Usage, Default string
	// File: experiment files may give it.
	File bool
	// Secret: a value other than Default is masked in what v6lab records.
	Secret bool
	v      reflect.Value
}

// Flag kinds: how a field is declared as a flag, by its Go type.
const (
	KindString   = "string"
	KindBool     = "bool"
	KindInt      = "int"
	KindList     = "list"
	KindDuration = "duration"
)

// Kind is how the field is declared as a flag: bool, int, duration, list
// (repeated) or string.
func (f Field) Kind() string {
	t := f.v.Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Duration]() || t == reflect.TypeFor[Duration]():
		return KindDuration
	case t.Kind() == reflect.Bool:
		return KindBool
	case t.Kind() == reflect.Int && t.Name() == "int":
		return KindInt
	case t.Kind() == reflect.Slice:
		return KindList
	}
	return KindString
}

// Set sets the option from text, as a flag or a file's scalar gives it;
// a list option gets it appended.
func (f Field) Set(text string) error {
	if err := specfile.SetText(f.v, text); err != nil {
		return &OptionError{Option: f.Name, Err: err}
	}
	return nil
}

// IsZero reports whether the option holds its zero value (not given).
func (f Field) IsZero() bool { return f.v.IsZero() }

// Fields lists the options of v, a pointer to an options (or server
// settings) struct, in the struct's order.
func Fields(v any) []Field {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("proto: options of type %T are not a pointer to a struct", v))
	}
	var out []Field
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, ok := sf.Tag.Lookup("opt")
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct && !ok {
				walk(v.Field(i))
				continue
			}
			name, rest, _ := strings.Cut(tag, ",")
			if !ok || name == "-" || name == "" || !sf.IsExported() {
				continue
			}
			f := Field{Name: name, Flag: strings.ReplaceAll(name, "_", "-"), Usage: sf.Tag.Get("usage"), File: true, v: v.Field(i)}
			for _, o := range strings.Split(rest, ",") {
				k, val, _ := strings.Cut(o, "=")
				switch k {
				case "fileonly":
					f.Flag = ""
				case "flagonly":
					f.File = false
				case "flag":
					f.Flag = val
				case "short":
					f.Short = val
				case "default":
					f.Default = val
				case "secret":
					f.Secret = true
				case "":
				default:
					panic(fmt.Sprintf("proto: option %s: unknown tag part %q", name, o))
				}
			}
			out = append(out, f)
		}
	}
	walk(rv.Elem())
	return out
}

// FieldOf is v's option called name.
func FieldOf(v any, name string) (Field, bool) {
	for _, f := range Fields(v) {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Set sets v's option name from text.
func Set(v any, name, text string) error {
	f, ok := FieldOf(v, name)
	if !ok {
		return fmt.Errorf("no option %q", name)
	}
	return f.Set(text)
}

// FileNames lists the options experiment files may give in v.
func FileNames(v any) []string {
	var out []string
	for _, f := range Fields(v) {
		if f.File {
			out = append(out, f.Name)
		}
	}
	return out
}

// Duration is an option's time that files, flags and results spell as Go
// does ("250ms", "1.5s").
type Duration time.Duration

// MarshalText writes the duration as Go prints it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "1.5s", "200ms", …
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 250ms or 10s", b)
	}
	*d = Duration(v)
	return nil
}

// String is the duration as Go prints it.
func (d Duration) String() string { return time.Duration(d).String() }

// Text is the option's value as a flag spells it ("" for a list or an
// unset pointer).
func (f Field) Text() string {
	v := f.v
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case encoding.TextMarshaler:
		b, _ := x.MarshalText()
		return string(b)
	case fmt.Stringer:
		return x.String()
	}
	if v.Kind() == reflect.Slice {
		return ""
	}
	return fmt.Sprint(v.Interface())
}
