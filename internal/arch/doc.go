// Package arch holds no code: its test enforces that v6lab's dependencies
// point down only (DESIGN.md): path and result import nothing internal but
// the leaf kstamp (path: the kernel's timestamps of its sockets), the
// statistics and reports never import what measures, and only the CLI sits
// on top.
package arch
