package proto

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// The flags of v6lab probe NAME and serve NAME come from the same tags as
// experiment files read (Fields): an option is declared once.

// RegisterFlags declares a flag for each option (or server setting) of v
// that has one; its default is its tag's, else v's own value.
func RegisterFlags(fl *pflag.FlagSet, v any) {
	for _, f := range Fields(v) {
		if f.Flag == "" {
			continue
		}
		def := Or(f.Default, f.Text())
		switch f.Kind() {
		case KindBool:
			fl.BoolP(f.Flag, f.Short, def == "true", f.Usage)
		case KindInt:
			n, _ := strconv.Atoi(def)
			fl.IntP(f.Flag, f.Short, n, f.Usage)
		case KindDuration:
			d, _ := time.ParseDuration(def)
			fl.DurationP(f.Flag, f.Short, d, f.Usage)
		case KindList:
			fl.StringArrayP(f.Flag, f.Short, nil, f.Usage)
		default:
			fl.StringP(f.Flag, f.Short, def, f.Usage)
		}
	}
}

// ApplyFlags sets v's options from their flags: each flag's value (its
// default unless given; a list only when given). Errors name the flag.
func ApplyFlags(fl *pflag.FlagSet, v any) error {
	for _, f := range Fields(v) {
		if f.Flag == "" {
			continue
		}
		var vals []string
		if f.Kind() == KindList {
			vals, _ = fl.GetStringArray(f.Flag)
		} else {
			vals = []string{fl.Lookup(f.Flag).Value.String()}
		}
		for _, text := range vals {
			if err := f.Set(text); err != nil {
				return FlagError(err, v)
			}
		}
	}
	return nil
}

// GivenFlags says whether the user gave an option of v on the command
// line, by its option name.
func GivenFlags(fl *pflag.FlagSet, v any) Given {
	return func(opt string) bool {
		f, ok := FieldOf(v, opt)
		return ok && f.Flag != "" && fl.Changed(f.Flag)
	}
}

// FlagError names the flag of a bad option of v (or the flags of options
// required and missing).
func FlagError(err error, v any) error {
	oe, ok := AsOptionError(err)
	flagOf := func(opt string) string {
		if f, ok := FieldOf(v, opt); ok && f.Flag != "" {
			return "--" + f.Flag
		}
		return ""
	}
	if ok && len(oe.Need) > 0 {
		var need []string
		for _, o := range oe.Need {
			if f := flagOf(o); f != "" {
				need = append(need, f)
			}
		}
		if len(need) > 0 {
			return fmt.Errorf("%s %s required (%s)", strings.Join(need, " and "), map[bool]string{true: "is", false: "are"}[len(need) == 1], oe.Why)
		}
	}
	if !ok || oe.Option == "" {
		return err
	}
	name, _, _ := strings.Cut(oe.Option, "[")
	f := flagOf(name)
	if f != "" && oe.Give != nil && flagOf(oe.Give.Option) != "" {
		return fmt.Errorf("%s: %s: %s", f, oe.Reason, oe.Give.Say(flagOf(oe.Give.Option)))
	}
	if f != "" {
		return fmt.Errorf("%s: %w", f, oe.Err)
	}
	return err
}

// FlagParams are the values of v's option flags as the command line left
// them (given or default, lists left out), by option name: what a probe
// records of its options.
func FlagParams(fl *pflag.FlagSet, v any) map[string]string {
	params := map[string]string{}
	for _, f := range Fields(v) {
		if f.Flag == "" || f.Kind() == KindList {
			continue
		}
		if fv := fl.Lookup(f.Flag); fv != nil && fv.Value.String() != "" {
			params[f.Name] = fv.Value.String()
			if f.Secret && params[f.Name] != f.Default {
				params[f.Name] = Mask // used, never written
			}
		}
	}
	return params
}
