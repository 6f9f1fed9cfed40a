// Package specfile decodes the YAML files users write (lab topologies,
// experiments) strictly: an unknown field, a value of the wrong type, a key
// given twice or a missing value is an error that names the file, the line
// and the field, and so is every rule the caller checks afterwards.
//
// It imports nothing of v6lab.
package specfile

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem in a spec file, at a field.
type Error struct {
	File  string
	Line  int    // 0 when the field is not in the file (a missing field)
	Field string // dotted path: tunnel.mtu, links.r1-r2.rate, conns[2]
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": " + Excerpt(e.Field))
	}
	b.WriteString(": " + shortQuotes(e.Msg))
	return b.String()
}

// excerptLen is the most of a user's text an error quotes.
const excerptLen = 40

// Excerpt is s as an error may show it: non-printable characters escaped,
// at most excerptLen characters, "…" marking a cut.
func Excerpt(s string) string {
	q := strconv.QuoteToASCII(s)
	q = q[1 : len(q)-1]
	if r := []rune(q); len(r) > excerptLen {
		return string(r[:excerptLen]) + "…"
	}
	return q
}

// quoted is a double-quoted string (as %q writes it); matched from the
// left, so that the text between two quoted values is never taken for one.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// shortQuotes cuts every quoted value in msg to an excerpt: an error never
// quotes more than a short part of what a file held.
func shortQuotes(msg string) string {
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if r := []rune(q[1 : len(q)-1]); len(r) > excerptLen {
			return `"` + string(r[:excerptLen]) + `…"`
		}
		return q
	})
}

// MaxFile is the largest spec file v6lab reads.
const MaxFile = 1 << 20

// ReadFile reads a spec file of at most MaxFile bytes.
func ReadFile(name string) ([]byte, error) {
	// A FIFO or a device would block or never end: only a regular file is
	// a spec file.
	if st, err := os.Stat(name); err == nil && !st.Mode().IsRegular() {
		return nil, &Error{File: name, Msg: fmt.Sprintf("not a regular file (%s): give a spec file", Kind(st.Mode()))}
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFile {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d KiB: v6lab reads spec files of at most that size (is it the right file?)", MaxFile>>10)}
	}
	return data, nil
}

// Doc remembers where each field of a decoded file was, so that rules
// checked after decoding can name the line.
type Doc struct {
	File  string
	lines map[string]int
	// optTag: struct fields are named by opt tags (DecodeRest).
	optTag bool
}

// Errorf makes an error about field (a dotted path as in Error.Field).
func (d *Doc) Errorf(field, format string, args ...any) error {
	return &Error{File: d.File, Line: d.lines[field], Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Has reports whether the file gave field.
func (d *Doc) Has(field string) bool {
	_, ok := d.lines[field]
	return ok
}

// Line is the line of field, or 0.
func (d *Doc) Line(field string) int { return d.lines[field] }

// Decode reads data (the contents of file) into v, a pointer to a struct
// whose fields carry yaml tags. Types implementing encoding.TextUnmarshaler
// read their scalar text themselves.
func Decode(file string, data []byte, v any) (*Doc, error) {
	d := &Doc{File: file, lines: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "the file is empty"}
		}
		return nil, syntaxError(file, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Line: extra.Line, Msg: "a second YAML document: one file holds one spec"}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(file, data, err)
	}
	node := &root
	if node.Kind == yaml.DocumentNode {
		if len(node.Content) == 0 {
			return nil, &Error{File: file, Msg: "the file is empty"}
		}
		node = node.Content[0]
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic("specfile: Decode needs a pointer to a struct")
	}
	if err := d.decode(node, rv.Elem(), ""); err != nil {
		return nil, err
	}
	return d, nil
}

// parserErrors are the YAML parser's errors (not its scanner's); those of
// a flow collection name the bracket left open.
var parserErrors = map[string]string{
	"did not find expected ',' or ']'": "[", "did not find expected ',' or '}'": "{",
	"did not find expected key": "", "did not find expected '-' indicator": "", "did not find expected node content": "",
	"did not find expected <document start>": "", "found duplicate %YAML directive": "", "found incompatible YAML document": "",
	"found duplicate %TAG directive": "", "found undefined tag handle": "",
}

// parserLine is the 1-based line of a parser error that go.yaml.in/yaml/v3
// gave as line (its fail: the 0-based line where the construct being
// parsed began, or where the problem is when that was the first line; a
// scanner's error is 1-based already). A flow collection's error is put on
// the line of its bracket: the nearest at or above.
func parserLine(data []byte, line int, bracket string) int {
	line++
	if bracket == "" {
		return line
	}
	lines := strings.Split(string(data), "\n")
	for n := min(line, len(lines)); n >= 1; n-- {
		if strings.Contains(lines[n-1], bracket) {
			return n
		}
	}
	return line
}

// syntaxError turns the YAML parser's "yaml: line N: msg" into an Error.
func syntaxError(file string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, rest[i+2:]
			}
		}
	}
	if bracket, parser := parserErrors[msg]; parser {
		line = parserLine(data, line, bracket)
		if bracket != "" {
			msg = fmt.Sprintf("the '%s' on this line is not closed, or an item in it lacks its ',' (%s)", bracket, msg)
		}
	}
	if exact, ok := indentErrors[msg]; ok {
		return indentError(file, data, line, msg, exact)
	}
	return &Error{File: file, Line: line, Msg: "not valid YAML: " + msg + flowColonHint(data, line)}
}

// flowColonHint says to quote an item of a [...] on line (1-based) that
// holds a colon, which YAML reads as a key in a flow list (an IPv6
// address: [name=192.0.2.1,::1]); "" when no item does.
func flowColonHint(data []byte, line int) string {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	_, list, ok := strings.Cut(lines[line-1], "[")
	if !ok {
		return ""
	}
	list, _, _ = strings.Cut(list, "]")
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if strings.Contains(item, ":") && !strings.ContainsAny(item[:1], `"'`) {
			return fmt.Sprintf("; an item of the [...] on this line holds a colon (%s), which YAML reads as a key: quote such a value, commas and all: [\"name=192.0.2.1,::1\"]", Excerpt(item))
		}
	}
	return ""
}

// indentError is the error of a mis-indented line (indentErrors): on the
// line misIndented finds, saying what is wrong with its indentation, with
// the parser's words and line; msg alone where it finds none (or, exact,
// none on the parser's own line).
func indentError(file string, data []byte, line int, msg string, exact bool) error {
	// The library gives no line for a scanner's error on the first line
	// (its 0-based line 0).
	line = max(line, 1)
	if b, ok := misIndented(data, line); ok && (!exact || b.line == line) {
		// The parser's line is where the block it was in began; the line
		// that broke it may be further down (trial7 F8).
		where := ""
		if b.line != line {
			where = fmt.Sprintf(", in the block from line %d", line)
		}
		line, msg = b.line, fmt.Sprintf("%s; the parser's words%s: %s", b.text(), where, msg)
	}
	return &Error{File: file, Line: line, Msg: "not valid YAML: " + msg}
}

func (d *Doc) errAt(n *yaml.Node, field, format string, args ...any) error {
	return &Error{File: d.File, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func (d *Doc) decode(n *yaml.Node, v reflect.Value, field string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if field != "" {
		if _, seen := d.lines[field]; !seen {
			d.lines[field] = n.Line
		}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return d.errAt(n, field, "has no value")
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem(), field)
	}
	if v.CanAddr() && v.Addr().Type().Implements(textUnmarshaler) {
		if n.Kind != yaml.ScalarNode {
			return d.errAt(n, field, "want a single value, not a %s", kindName(n))
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			return d.errAt(n, field, "%v", err)
		}
		return nil
	}
	if n.Kind == yaml.ScalarNode && v.Kind() == reflect.Struct && v.CanAddr() {
		if sh, ok := v.Addr().Interface().(Shorthand); ok {
			if err := sh.UnmarshalShorthand(n.Value); err != nil {
				return d.errAt(n, field, "%v", err)
			}
			return nil
		}
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, v, field)
	case reflect.Map:
		return d.decodeMap(n, v, field)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errAt(n, field, "want a list, not %s", describe(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", field, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.errAt(n, field, "want a single value, not a %s", kindName(n))
	}
	if err := SetText(v, n.Value); err != nil {
		return d.errAt(n, field, "%v", err)
	}
	return nil
}

// Shorthand is a struct that a file may also give as a single value, the
// one field most files set: `nat64: stateful` for `nat64: {mode: stateful}`.
type Shorthand interface {
	UnmarshalShorthand(text string) error
}

// SetText sets v, a string, bool, number or encoding.TextUnmarshaler
// (or a pointer to one), from text as a file's scalar or a flag gives it:
// the one reading of a value, whichever way it came. A slice of them
// gets text appended (a flag given again).
func SetText(v reflect.Value, text string) error {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return SetText(v.Elem(), text)
	}
	if v.CanAddr() && v.Addr().Type().Implements(textUnmarshaler) {
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text))
	}
	switch v.Kind() {
	case reflect.Slice:
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := SetText(elem, text); err != nil {
			return err
		}
		v.Set(reflect.Append(v, elem))
	case reflect.String:
		v.SetString(text)
	case reflect.Bool:
		b, ok := map[string]bool{"true": true, "false": false}[text]
		if !ok {
			return fmt.Errorf("want true or false, not %q", text)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(text), "_", ""), 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("want a whole number, not %q", text)
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(strings.ReplaceAll(strings.TrimSpace(text), "_", ""), 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("want a whole number of at least 0, not %q", text)
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(text, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("want a number, not %q", text)
		}
		v.SetFloat(f)
	default:
		panic("specfile: cannot decode into " + v.Type().String())
	}
	return nil
}

var fieldLike = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// anyKnown says whether a mapping could be a spec with a typo: one of its
// keys is a field, or it has a single key that looks like one.
func anyKnown(n *yaml.Node, fields map[string][]int) bool {
	for i := 0; i < len(n.Content); i += 2 {
		if _, ok := fields[n.Content[i].Value]; ok {
			return true
		}
	}
	return len(n.Content) == 0 || len(n.Content) == 2 && fieldLike.MatchString(n.Content[0].Value)
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// keys walks a mapping's keys, rejecting keys that are not plain strings
// and keys given twice.
func (d *Doc) keys(n *yaml.Node, field string, each func(key string, k, val *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return d.errAt(n, field, "want a mapping of fields, not %s", describe(n))
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "<<" {
			return d.errAt(k, field, "keys must be plain names")
		}
		if line, dup := first[k.Value]; dup {
			return d.errAt(k, join(field, k.Value), "given twice (first at line %d)", line)
		}
		first[k.Value] = k.Line
		if err := each(k.Value, k, val); err != nil {
			return err
		}
	}
	return nil
}

// Rest holds the keys of a mapping that its struct has no field for, when
// the struct has a field of this type tagged `yaml:",rest"`: what the
// caller decodes once it knows into what (a cell's protocol options, once
// its protocol is known; DecodeRest).
type Rest struct {
	Field string // where the mapping is (cells[0])
	pairs []*yaml.Node
}

// Keys lists the keys it holds, in the file's order.
func (r Rest) Keys() []string {
	var out []string
	for i := 0; i+1 < len(r.pairs); i += 2 {
		out = append(out, r.pairs[i].Value)
	}
	return out
}

// Split makes one Rest per value of key when key holds a list: each has
// the same keys, key holding one of the list's values (a cell that lists
// its HTTP versions is a cell group per version), in the list's order,
// with the values' text. It returns nil when key is absent or holds one
// value, and an error naming the field when the list is empty, holds
// something other than plain values, or holds one twice.
func (r Rest) Split(d *Doc, key string) ([]Rest, []string, error) {
	for i := 0; i+1 < len(r.pairs); i += 2 {
		k, val := r.pairs[i], r.pairs[i+1]
		if k.Value != key || val.Kind != yaml.SequenceNode {
			continue
		}
		at := join(r.Field, key)
		d.lines[at] = k.Line
		if len(val.Content) == 0 {
			return nil, nil, d.errAt(val, at, "the list is empty")
		}
		var out []Rest
		var values []string
		for j, item := range val.Content {
			if item.Kind != yaml.ScalarNode {
				return nil, nil, d.errAt(item, fmt.Sprintf("%s[%d]", at, j), "want a single value, not a %s", kindName(item))
			}
			if k := slices.IndexFunc(values, func(v string) bool { return sameValue(v, item.Value) }); k >= 0 {
				as := ""
				if values[k] != item.Value {
					as = fmt.Sprintf(" (as %s at %s[%d])", values[k], at, k)
				}
				return nil, nil, d.errAt(item, fmt.Sprintf("%s[%d]", at, j), "%s is listed twice%s", item.Value, as)
			}
			pairs := slices.Clone(r.pairs)
			pairs[i+1] = item
			out = append(out, Rest{Field: r.Field, pairs: pairs})
			values = append(values, item.Value)
		}
		return out, values, nil
	}
	return nil, nil, nil
}

var restType = reflect.TypeFor[Rest]()

// structFields maps a struct's field names under tag (yaml, opt) to
// their index paths, fields of embedded structs included as if they were
// the struct's own; rest is the index of a Rest field, if any.
func structFields(t reflect.Type, tag string) (fields map[string][]int, names []string, rest []int) {
	fields = map[string][]int{}
	var walk func(t reflect.Type, at []int)
	walk = func(t reflect.Type, at []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(append([]int(nil), at...), i)
			name, opts, _ := strings.Cut(f.Tag.Get(tag), ",")
			switch {
			case tag == "opt" && strings.Contains(","+opts+",", ",flagonly,"):
				continue // a command's own setting, never in a file
			case f.Type == restType && opts == "rest":
				rest = idx
				continue
			case f.Anonymous && f.Type.Kind() == reflect.Struct && name == "":
				walk(f.Type, idx)
				continue
			case !f.IsExported() || name == "-" || name == "":
				continue
			}
			if _, dup := fields[name]; !dup {
				names = append(names, name)
			}
			fields[name] = idx
		}
	}
	walk(t, nil)
	sort.Strings(names)
	return fields, names, rest
}

func (d *Doc) decodeStruct(n *yaml.Node, v reflect.Value, field string) error {
	fields, names, rest := structFields(v.Type(), d.tag())
	if field == "" && n.Kind == yaml.MappingNode && !anyKnown(n, fields) {
		// Not a spec of this kind at all (another file given by mistake):
		// say so without quoting any of it.
		return &Error{File: d.File, Line: n.Line, Msg: fmt.Sprintf("not a file of this kind: none of its top-level keys is one of its fields (%s)", strings.Join(names, ", "))}
	}
	var r *Rest
	if rest != nil {
		r = v.FieldByIndex(rest).Addr().Interface().(*Rest)
		r.Field = field
	}
	return d.keys(n, field, func(key string, k, val *yaml.Node) error {
		i, ok := fields[key]
		switch {
		case !ok && r != nil:
			r.pairs = append(r.pairs, k, val)
			return nil
		case !ok:
			return d.errAt(k, join(field, key), "%s", UnknownField(key, names))
		}
		d.lines[join(field, key)] = k.Line
		return d.decode(val, v.FieldByIndex(i), join(field, key))
	})
}

// tag is the struct tag that names fields: yaml, or opt in DecodeRest.
func (d *Doc) tag() string {
	if d.optTag {
		return "opt"
	}
	return "yaml"
}

// DecodeRest decodes the keys r holds into v, a pointer to a struct whose
// fields are named by `opt` tags (a protocol's options; those tagged
// flagonly are a command's, never a file's). A key v has no field for is
// an error: unknown(key) says why (empty: an unknown field).
func (d *Doc) DecodeRest(r Rest, v any, unknown func(key string) string) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic("specfile: DecodeRest needs a pointer to a struct")
	}
	d.optTag = true
	defer func() { d.optTag = false }()
	fields, names, _ := structFields(rv.Elem().Type(), "opt")
	for i := 0; i+1 < len(r.pairs); i += 2 {
		k, val := r.pairs[i], r.pairs[i+1]
		at := join(r.Field, k.Value)
		d.lines[at] = k.Line
		idx, ok := fields[k.Value]
		if !ok {
			why := unknown(k.Value)
			if why == "" {
				why = UnknownField(k.Value, names)
			}
			return d.errAt(k, at, "%s", why)
		}
		if err := d.decode(val, rv.Elem().FieldByIndex(idx), at); err != nil {
			return err
		}
	}
	return nil
}

func (d *Doc) decodeMap(n *yaml.Node, v reflect.Value, field string) error {
	if v.Type().Key().Kind() != reflect.String {
		panic("specfile: map keys must be strings")
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	return d.keys(n, field, func(key string, k, val *yaml.Node) error {
		d.lines[join(field, key)] = k.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := d.decode(val, elem, join(field, key)); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), elem)
		return nil
	})
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%q", n.Value)
	}
	return "a " + kindName(n)
}

// Kind names a file's type in words (its mode's type letter, "d---------"
// for a directory, said nothing to a reader).
func Kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device"
	default:
		return "a special file"
	}
}

// sameValue says whether two values of a list are one: the same text, or
// the same number written two ways (2 and 2.0).
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && x == y
}
