package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	wgtun "golang.zx2c4.com/wireguard/tun"

	"v6lab/internal/lab/bpf"
	"v6lab/internal/lab/sixin4"
)

// userTunnel is one router's end of the userspace tunnel.
type userTunnel = sixin4.Tunnel

// ErrNoSit is wrapped when the kernel has no sit device.
var ErrNoSit = errors.New("the kernel has no sit (6in4) device")

// CanTunnel says whether this process can make a 6in4 tunnel: the kernel
// has sit, or BPF programs load (the bpf tunnel), or /dev/net/tun opens
// for the userspace tunnel. (Root always can; a user in a user namespace
// has no BPF and may not open a root-only /dev/net/tun.)
func CanTunnel() error {
	if _, err := os.Stat("/sys/module/sit"); err == nil {
		return nil
	}
	berr := bpf.Check()
	if berr == nil {
		return nil
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("lab: 6in4 needs the kernel's sit module, tc BPF (%v), or the TUN device for the userspace tunnel (%w)", berr, err)
	}
	return f.Close()
}

// Tunnel implementations, in the order auto tries them.
const (
	TunnelSit       = "sit"       // the kernel's sit device
	TunnelBPF       = "bpf"       // v6lab's tc BPF programs on the routers' link (kernel datapath)
	TunnelUserspace = "userspace" // TUN + raw socket in the owner process: slow, measures itself
	TunnelVxlan     = "vxlan"     // not 6in4: a kernel reference for benchmarks
)

// AutoTunnel is the implementation a lab's auto tunnel takes on this
// kernel, as addTunnel tries them: sit where the kernel has it, else bpf
// where BPF programs load, else userspace; "" where this process cannot
// tell (it may not make a namespace to try sit in).
func AutoTunnel() string {
	err := HasSit()
	switch {
	case err == nil:
		return TunnelSit
	case !errors.Is(err, ErrNoSit):
		return ""
	case bpf.Check() == nil:
		return TunnelBPF
	}
	return TunnelUserspace
}

// TunnelKinds are the implementations a user may ask for ("auto" = "").
var TunnelKinds = []string{"auto", TunnelSit, TunnelBPF, TunnelUserspace, TunnelVxlan}

// tunnelRouter is one router's end of the 6in4 tunnel: its address on
// the r1-r2 link and the peer's.
type tunnelRouter struct {
	role          string
	local, remote netip.Addr
}

// addTunnel makes the 6in4 tunnel between the routers: the kernel's sit
// device where it exists (or was asked for), else the tc BPF programs where
// they load, else the userspace tunnel; TunnelWhy says why auto passed over
// the faster ones.
func (l *Lab) addTunnel(ctx context.Context, hs map[string]*netlink.Handle) error {
	ends := []tunnelRouter{{R1, l.Addr.TunnelV4[0], l.Addr.TunnelV4[1]}, {R2, l.Addr.TunnelV4[1], l.Addr.TunnelV4[0]}}
	impl := l.Config.Tunnel
	if impl == "vxlan" {
		for i, e := range ends {
			if err := l.addVxlan(hs[e.role], e.local, e.remote, i); err != nil {
				return err
			}
		}
		l.TunnelImpl = "vxlan"
	}
	if impl == "" || impl == "sit" {
		err := l.addSit(hs[R1], ends[0].local, ends[0].remote)
		if err == nil {
			err = l.addSit(hs[R2], ends[1].local, ends[1].remote)
		}
		switch {
		case err == nil:
			l.TunnelImpl = "sit"
		case impl == "" && errors.Is(err, ErrNoSit):
			impl = TunnelBPF
		case errors.Is(err, ErrNoSit):
			return fmt.Errorf("%w: --tunnel bpf (a topology's tunnel.implementation: bpf) carries 6in4 in tc BPF programs instead, or leave the tunnel unset to take the first that works", err)
		default:
			return err
		}
	}
	if impl == TunnelBPF {
		err := l.addBPFTunnel()
		switch {
		case err == nil:
			l.TunnelImpl = TunnelBPF
			return nil // no tunnel device: routes carry the MTU (addRoutes)
		case l.Config.Tunnel == "" && errors.Is(err, bpf.ErrUnsupported):
			l.closeBPF()
			l.TunnelWhy = "no sit device, and " + err.Error()
			impl = TunnelUserspace
		default:
			return err
		}
	}
	if impl == "userspace" {
		if err := l.addUserspaceTunnel(ends); err != nil {
			return err
		}
	}
	return l.tunnelDevicesUp(hs, ends)
}

// addUserspaceTunnel opens, in each router, a TUN device and a raw
// protocol-41 socket, and starts the owner process's loop between them.
func (l *Lab) addUserspaceTunnel(ends []tunnelRouter) error {
	for _, e := range ends {
		var tun wgtun.Device
		var conn *net.IPConn
		err := Do(NS(l.Name, e.role), func() error {
			var err error
			if tun, err = sixin4.OpenTUN(TunnelIf, l.TunnelMTU); err != nil {
				return err
			}
			if conn, err = sixin4.Listen(e.local); err != nil {
				tun.Close()
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("lab: %s: %w", e.role, err)
		}
		l.tunnels = append(l.tunnels, sixin4.New(tun, conn, e.remote))
	}
	l.TunnelImpl = "userspace"
	return nil
}

// tunnelDevicesUp sets the tunnel device's MTU on both routers (a vxlan's
// no more than its link leaves room for) and brings it up.
func (l *Lab) tunnelDevicesUp(hs map[string]*netlink.Handle, ends []tunnelRouter) error {
	mtu := l.TunnelMTU
	if l.TunnelImpl == "vxlan" {
		mtu = min(mtu, 1450) // vxlan over IPv4 costs 50 bytes of a 1500-byte link
	}
	for _, e := range ends {
		h := hs[e.role]
		ln, err := h.LinkByName(TunnelIf)
		if err == nil {
			err = h.LinkSetMTU(ln, mtu)
		}
		if err == nil {
			err = h.LinkSetUp(ln)
		}
		if err != nil {
			return fmt.Errorf("lab: %s: tunnel interface: %w", e.role, err)
		}
	}
	return nil
}

// tunnelEnds are the routers' ends of the bpf tunnel: the interface on
// the r1-r2 link and what crosses it.
func (l *Lab) tunnelEnds() []struct {
	role, ifname string
	end          bpf.TunnelEnd
} {
	a, b, c := links[0], links[1], links[2]
	return []struct {
		role, ifname string
		end          bpf.TunnelEnd
	}{
		{R1, b.aIf, bpf.TunnelEnd{Local: l.Addr.TunnelV4[0], Remote: l.Addr.TunnelV4[1], Remote6: c.tun6}},
		{R2, b.bIf, bpf.TunnelEnd{Local: l.Addr.TunnelV4[1], Remote: l.Addr.TunnelV4[0], Remote6: a.tun6}},
	}
}

// addBPFTunnel loads and attaches the tc BPF tunnel on both routers. The
// programs live as long as this process holds them (TCX links close with
// it), like the userspace tunnel; a lab whose owner died is removed.
func (l *Lab) addBPFTunnel() error {
	if err := bpf.Check(); err != nil {
		return fmt.Errorf("lab: 6in4 over tc BPF: %w", err)
	}
	for _, e := range l.tunnelEnds() {
		err := Do(NS(l.Name, e.role), func() error {
			t, err := bpf.NewTunnel(e.end)
			if err != nil {
				return err
			}
			l.bpfObjs = append(l.bpfObjs, t)
			ifc, err := net.InterfaceByName(e.ifname)
			if err != nil {
				return err
			}
			if err := t.Attach(ifc.Index, l.hook()); err != nil {
				return err
			}
			l.TunnelHook = string(t.Hook)
			return nil
		})
		if err != nil {
			return fmt.Errorf("lab: %s: 6in4 over tc BPF: %w", e.role, err)
		}
	}
	return nil
}

// hook is how BPF programs attach: TCX unless the config forces clsact.
func (l *Lab) hook() bpf.Hook { return bpf.Hook(l.BPFHook) }

// closeBPF unloads the lab's BPF programs (TCX links detach as they
// close; clsact filters go with the namespaces).
func (l *Lab) closeBPF() {
	for _, o := range l.bpfObjs {
		o.Close()
	}
	l.bpfObjs = nil
}

func (l *Lab) addSit(h *netlink.Handle, local, remote netip.Addr) error {
	sit := &netlink.Sittun{LinkAttrs: netlink.LinkAttrs{Name: TunnelIf}, Local: local.AsSlice(), Remote: remote.AsSlice(), Ttl: 64}
	if err := h.LinkAdd(sit); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EAFNOSUPPORT) ||
			err.Error() == "operation not supported" {
			return fmt.Errorf("lab: %w", ErrNoSit)
		}
		return fmt.Errorf("lab: sit tunnel: %w", err)
	}
	return nil
}

// vxlanTransit numbers the routers' ends of the vxlan reference tunnel: it
// is a link of its own, so routes into it need a gateway.
var vxlanTransit = netip.MustParsePrefix("2001:db8:46:ff::/64")

// addVxlan makes the kernel vxlan reference tunnel (VNI 46, UDP 4789) on
// one router. It carries IPv6 in UDP over IPv4, not 6in4: it exists to
// compare the userspace tunnel's cost with a kernel tunnel.
func (l *Lab) addVxlan(h *netlink.Handle, local, remote netip.Addr, end int) error {
	under, err := h.LinkByName(links[1].aIf)
	if err != nil {
		if under, err = h.LinkByName(links[1].bIf); err != nil {
			return fmt.Errorf("lab: vxlan underlay: %w", err)
		}
	}
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: TunnelIf}, VxlanId: 46, VtepDevIndex: under.Attrs().Index,
		SrcAddr: local.AsSlice(), Group: remote.AsSlice(), Port: 4789, TTL: 64}
	if err := h.LinkAdd(vx); err != nil {
		return fmt.Errorf("lab: vxlan tunnel: %w", err)
	}
	ln, err := h.LinkByName(TunnelIf)
	if err != nil {
		return fmt.Errorf("lab: vxlan tunnel: %w", err)
	}
	return addAddr(h, ln, netip.PrefixFrom(hostAddr(vxlanTransit, byte(end+1)), 64))
}
