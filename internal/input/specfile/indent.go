package specfile

import (
	"fmt"
	"strings"
)

// go.yaml.in/yaml/v3 names, for a parser error, the line where the block
// it was parsing began, not the line that broke it: a key indented one
// space less than its siblings on line 5 is "line 4: did not find expected
// '-' indicator" when the list item began on line 4 (trial7 F8), and a tab
// in an indentation is named on the line above. misIndented finds the
// line that broke the blocks, so the error names it.

// indentErrors are the parser's and scanner's errors that a mis-indented
// line causes, and whether their line is that line already (the
// scanner's "mapping values", at the key it read): a parser's error, and
// a tab's, are moved to the first line at or after theirs that
// misIndented finds; the others only get its words, on their own line.
var indentErrors = map[string]bool{
	"did not find expected '-' indicator":                    false,
	"did not find expected key":                              false,
	"found a tab character that violates indentation":        false,
	"mapping values are not allowed in this context":         true,
	"block sequence entries are not allowed in this context": true,
	"found character that cannot start any token":            true,
}

// badIndent is a line whose indentation breaks the blocks above it.
type badIndent struct {
	line   int   // 1-based
	indent int   // its spaces
	open   []int // the columns of the blocks open above it
	tab    bool  // a tab in its indentation
	dash   bool  // the tab follows its '-'
	kind   bool  // at a block's column, but a key among '-' items or an item among keys
}

// text says what is wrong with the line's indentation.
func (b badIndent) text() string {
	if b.dash {
		return "a tab after this line's '-' (YAML separates an item's '-' from it with spaces only)"
	}
	if b.tab {
		return "a tab in this line's indentation (YAML indents with spaces only)"
	}
	if b.kind {
		return "this line is a key among '-' items, or a '-' item among keys, at the same column: a list's items and a mapping's keys each line up with their own kind (an item under a key is indented deeper than the key, or at its column right after it)"
	}
	cols := make([]string, len(b.open))
	for i, c := range b.open {
		cols[i] = fmt.Sprint(c)
	}
	at := "at " + strings.Join(cols, ", ")
	if len(cols) > 1 {
		at = "at " + strings.Join(cols[:len(cols)-1], ", ") + " or " + cols[len(cols)-1]
	}
	return fmt.Sprintf("this line is indented %s, lining up with no block above it (%s spaces: a key or '-' item lines up with its siblings; only a line ending in ':' or a '-' opens a deeper one)", plural(b.indent, "space"), at)
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// indentScan follows the block structure of a YAML file line by line:
// the columns of the open blocks, whether the last line opens a deeper
// one, and what to skip (a block scalar's text, a flow collection's
// continuation lines).
type indentScan struct {
	open []int
	// kind is each open block's: 'm' a mapping's keys, 's' a sequence's
	// '-' items, 'x' either (a sequence at its parent key's column, or a
	// scalar item's text).
	kind []byte
	// opener is the column of the last line's key with no value (or '-'
	// alone), under which a deeper block may begin; -1: none.
	opener int
	scalar int // a block scalar's text is the lines indented past this (-1: none)
	flow   int // open '[' and '{' carried to the next line
}

// misIndented is the first line at or after from (1-based) whose
// indentation breaks the blocks above it, ok false when none does.
func misIndented(data []byte, from int) (badIndent, bool) {
	s := indentScan{scalar: -1, opener: -1}
	for i, raw := range strings.Split(string(data), "\n") {
		if b, bad := s.line(strings.TrimRight(raw, "\r")); bad && i+1 >= from {
			b.line = i + 1
			return b, true
		}
	}
	return badIndent{}, false
}

// line takes one line of the file: bad when its indentation breaks the
// blocks open above it.
func (s *indentScan) line(raw string) (badIndent, bool) {
	body := strings.TrimLeft(raw, " ")
	indent := len(raw) - len(body)
	if s.scalar >= 0 && (strings.TrimSpace(body) == "" || indent > s.scalar) {
		return badIndent{}, false // a block scalar's text
	}
	s.scalar = -1
	if s.flow > 0 {
		s.flow += flowDepth(body)
		return badIndent{}, false
	}
	if strings.TrimSpace(body) == "" {
		return badIndent{}, false
	}
	if strings.HasPrefix(body, "\t") {
		return badIndent{indent: indent, tab: true}, true
	}
	if strings.HasPrefix(body, "-\t") {
		return badIndent{indent: indent, tab: true, dash: true}, true
	}
	body = strings.TrimSpace(stripComment(body))
	if body == "" || body == "---" || body == "..." {
		return badIndent{}, false
	}
	above := append([]int(nil), s.open...)
	for len(s.open) > 0 && s.open[len(s.open)-1] > indent {
		s.open, s.kind = s.open[:len(s.open)-1], s.kind[:len(s.kind)-1]
	}
	top := -1
	if len(s.open) > 0 {
		top = s.open[len(s.open)-1]
	}
	if deeper := s.opener >= 0 && indent > s.opener; top >= 0 && top < indent && !deeper {
		return badIndent{indent: indent, open: above}, true
	}
	if top < indent {
		s.push(indent, kindOf(body))
	} else if !s.fits(body, indent) {
		return badIndent{indent: indent, open: above, kind: true}, true
	}
	s.take(indent, body)
	return badIndent{}, false
}

// kindOf is the kind of block a line begins: a '-' item's or a key's.
func kindOf(body string) byte {
	if body == "-" || strings.HasPrefix(body, "- ") {
		return 's'
	}
	return 'm'
}

func (s *indentScan) push(col int, kind byte) {
	s.open, s.kind = append(s.open, col), append(s.kind, kind)
}

// fits says whether a line at the innermost open block's column is of its
// kind: a '-' item among a mapping's keys only where the key above opened
// it (a sequence at its key's column: the block then takes either), a key
// never among a sequence's items.
func (s *indentScan) fits(body string, indent int) bool {
	k := &s.kind[len(s.kind)-1]
	switch line := kindOf(body); {
	case *k == 'x' || *k == line:
		return true
	case line == 's' && s.opener == indent:
		*k = 'x'
		return true
	}
	return false
}

// take records what an accepted line opens: a '-' item's content is a
// block at its own column; a key with no value, or a '-' alone, opens a
// deeper one; '|' or '>' a block scalar; an unclosed bracket continues.
func (s *indentScan) take(indent int, body string) {
	col := indent
	for body == "-" || strings.HasPrefix(body, "- ") {
		rest := strings.TrimLeft(body[1:], " ")
		col += len(body) - len(rest)
		body = rest
		if body != "" {
			kind := byte('x') // a scalar item's text
			if k, _, ok := strings.Cut(body, ":"); ok && !strings.ContainsAny(k, `"'[{ `) {
				kind = 'm'
			}
			s.push(col, kind)
		}
	}
	s.flow = flowDepth(body)
	value := body
	if k, v, ok := strings.Cut(body, ": "); ok && !strings.ContainsAny(k, `"'[{`) {
		value = strings.TrimSpace(v)
	}
	s.opener = -1
	// An anchor or a tag alone (key: &a) is a key with no value yet.
	props := value != body && value != "" && strings.IndexByte("&!", value[0]) >= 0 && !strings.Contains(value, " ")
	if body == "" || strings.HasSuffix(body, ":") || props {
		s.opener = col
	}
	if value != "" && (value[0] == '|' || value[0] == '>') && strings.Trim(value[1:], "+-0123456789") == "" {
		s.scalar = col
	}
}

// flowDepth is how many '[' and '{' a line leaves open (outside quotes).
func flowDepth(body string) int {
	depth := 0
	walkUnquoted(body, func(i int) bool {
		switch body[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
		return true
	})
	return depth
}

// stripComment is body without a '#' comment (one at its start, or after
// a space, outside quotes).
func stripComment(body string) string {
	end := len(body)
	walkUnquoted(body, func(i int) bool {
		if body[i] == '#' && (i == 0 || body[i-1] == ' ') {
			end = i
			return false
		}
		return true
	})
	return body[:end]
}

// walkUnquoted calls f with each byte's index outside '…' and "…" until f
// says stop.
func walkUnquoted(body string, f func(int) bool) {
	var quote byte
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" [{,:", body[i-1]) >= 0):
			quote = c
		case !f(i):
			return
		}
	}
}
