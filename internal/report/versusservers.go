package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Compare's servers: an embedded-server result against a real-server one
// pairs the servers that serve the same thing (trial8 F5, trial9 N3). A
// server's roles are the embedded servers' keys it stands for: its own
// key (a real one's without " (real)"), or what its result's header
// recorded (ServerRoles: nginx's "http (real)" with TLS for http and
// https, the DNS64 Unbound for dns). Servers of both results that share a
// role are one note; where both results have the same servers, each is a
// note of its own.

// realMark ends a real server's key in a header's servers.
const realMark = " (real)"

// serverKey is one server of one result.
type serverKey struct {
	side int // 0: A, 1: B
	key  string
}

// serverNotes say, per set of servers that serve the same roles, how A's
// and B's differ.
func serverNotes(a, b *Summary) []string {
	sides := []*Summary{a, b}
	var notes []string
	for _, g := range serverGroups(sides) {
		var keys [2][]string
		for _, k := range g {
			keys[k.side] = append(keys[k.side], k.key)
		}
		if slices.Equal(keys[0], keys[1]) {
			for _, k := range keys[0] {
				if va, vb := serverWords(a, k), serverWords(b, k); va != vb && !onlyPlaceDiffers(a, b, va, vb) {
					notes = append(notes, fmt.Sprintf("servers %s differs: A %s; B %s", k, va, vb))
				}
			}
			continue
		}
		names := map[string]bool{}
		for _, k := range g {
			names[strings.TrimSuffix(k.key, realMark)] = true
		}
		verb := "differs"
		if len(names) > 1 {
			verb = "differ"
		}
		notes = append(notes, fmt.Sprintf("servers %s %s: A %s; B %s", strings.Join(slices.Sorted(maps.Keys(names)), ", "), verb,
			sideServers(a, keys[0]), sideServers(b, keys[1])))
	}
	return notes
}

// serverPlace is what a lab's header adds to a server's description to
// say where it ran.
const serverPlace = " in the server namespace"

// onlyPlaceDiffers says whether servers va of a and vb of b differ only
// in saying where they ran, while a and b ran at different targets: the
// note that says A ran in the lab and B on loopback says it (trial11
// LOW 6).
func onlyPlaceDiffers(a, b *Summary, va, vb string) bool {
	if a.Target == b.Target {
		return false
	}
	without := func(v string) string {
		v = strings.ReplaceAll(v, ", a process"+serverPlace, "")
		return strings.ReplaceAll(v, serverPlace, "")
	}
	return without(va) == without(vb)
}

// serverGroups are the servers of both sides, grouped by shared roles,
// each group's keys sorted, the groups in the order of their first key.
func serverGroups(sides []*Summary) [][]serverKey {
	var groups [][]serverKey
	var roles []map[string]bool
	for side, s := range sides {
		for _, k := range slices.Sorted(maps.Keys(s.Servers)) {
			own := map[string]bool{}
			for _, r := range serverRoles(s, k) {
				own[r] = true
			}
			g := []serverKey{{side, k}}
			// Merge every group that shares a role with this server.
			for i := len(groups) - 1; i >= 0; i-- {
				if sharesRole(roles[i], own) {
					g = append(g, groups[i]...)
					maps.Copy(own, roles[i])
					groups, roles = slices.Delete(groups, i, i+1), slices.Delete(roles, i, i+1)
				}
			}
			groups, roles = append(groups, g), append(roles, own)
		}
	}
	for _, g := range groups {
		slices.SortFunc(g, func(x, y serverKey) int { return cmp.Or(x.side-y.side, strings.Compare(x.key, y.key)) })
	}
	slices.SortFunc(groups, func(x, y []serverKey) int {
		return strings.Compare(strings.TrimSuffix(minKey(x), realMark), strings.TrimSuffix(minKey(y), realMark))
	})
	return groups
}

// serverRoles are the embedded servers' keys a server of s stands for.
func serverRoles(s *Summary, key string) []string {
	if r := s.ServerRoles[key]; len(r) > 0 {
		return r
	}
	return []string{strings.TrimSuffix(key, realMark)}
}

// sideServers says one side's servers of a group: the one's description,
// or each by name; none: "no such server", or "(not recorded)" when the
// result recorded no servers at all.
func sideServers(s *Summary, keys []string) string {
	switch len(keys) {
	case 0:
		if len(s.Servers) == 0 {
			return "(not recorded)"
		}
		return "no such server"
	case 1:
		return serverWords(s, keys[0])
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimSuffix(k, realMark) + ": " + serverWords(s, k)
	}
	return strings.Join(out, "; ")
}

// serverWords is a server's description, a real one's marked "(real)".
func serverWords(s *Summary, key string) string {
	v, ok := s.Servers[key]
	if !ok {
		return sideServers(s, nil)
	}
	if strings.HasSuffix(key, realMark) {
		v += realMark
	}
	return orNone(v, true)
}

func sharesRole(a, b map[string]bool) bool {
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

func minKey(g []serverKey) string {
	m := g[0].key
	for _, k := range g[1:] {
		m = min(m, k.key)
	}
	return m
}
