// Package arch holds no code: its test enforces the layers of
// docs/ARCHITECTURE.md by folder: run, report, proto, gen, lab, wire,
// sock, then the leaves input and result; a package imports its own
// folder and the folders below, a few import less (statistics, the lab's
// datapaths, the kernel's stamps), only proto/all names a protocol, and
// only tests use testutil.
package arch
