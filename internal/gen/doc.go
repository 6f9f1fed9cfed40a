// Package gen generates what v6lab measures and loads the network with: the
// users' transactions (load), transport tests as iperf3's (transport),
// background flows as MGEN's (traffic, congestion) and the bytes servers
// serve (content).
package gen
