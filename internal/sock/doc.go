// Package sock holds family-pinned sockets: paths and their resolver (path),
// the event loop (evloop), Happy Eyeballs (eyeballs), the kernel's timestamps
// (kstamp, synstamp), what it knows of a TCP connection (tcpinfo) and what
// they need (sockaddr, wakeread).
package sock
