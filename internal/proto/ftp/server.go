package ftp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"time"

	ftpserver "github.com/fclairamb/ftpserverlib"
	"github.com/spf13/afero"

	"v6lab/internal/gen/content"
	"v6lab/internal/input/units"
	"v6lab/internal/proto"
	"v6lab/internal/proto/guard"
	vpath "v6lab/internal/sock/path"
	"v6lab/internal/sock/wakeread"
)

// MaxFileSize bounds a generated file so a typo cannot stream for days.
const MaxFileSize = proto.MaxFileSize

// Server is the embedded FTP server: any user name and password log in,
// and every file is generated on the fly, never stored — /1M, /5879824,
// /files/2G are that many bytes. Listing the root shows a few sizes.
type Server struct {
	servers []*ftpserver.FtpServer
	lns     []net.Listener
	// Port is the control port shared by every address.
	Port int
	// Logins counts successful logins; Transfers completed downloads.
	Logins, Transfers atomic.Int64
	wg                sync.WaitGroup
}

// Limits are the embedded server's control connection timeouts, as a real
// daemon's (ProFTPD idles out after 10 minutes; no command line needs 30
// seconds); tests shorten them.
var Limits = guard.Limits{Idle: 5 * time.Minute, Line: 30 * time.Second, Write: time.Minute}

// Listen starts the server on port (0 picks one) on every address, one
// port for all of them. Passive data connections are accepted on any
// address of the host (the library's choice); PASV and EPSV replies name the
// control connection's own address and port.
func Listen(ctx context.Context, addrs []netip.Addr, port int) (*Server, error) {
	s := &Server{}
	lns, got, err := vpath.ListenSamePort(ctx, addrs, port)
	if err != nil {
		return nil, fmt.Errorf("ftp: %w", err)
	}
	s.Port = got
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, ln := range lns {
		srv := ftpserver.NewFtpServer(&driver{s: s, ln: guard.Listener(wakeread.Listener{Listener: ln}, Limits)})
		srv.Logger = quiet
		if err := srv.Listen(); err != nil {
			s.Close()
			return nil, fmt.Errorf("ftp: %w", err)
		}
		s.servers = append(s.servers, srv)
		s.lns = append(s.lns, ln)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			srv.Serve()
		}()
	}
	return s, nil
}

// Addrs are the control addresses served.
func (s *Server) Addrs() []netip.AddrPort {
	return vpath.ListenerAddrs(s.lns)
}

// Close stops the server.
func (s *Server) Close() {
	for _, srv := range s.servers {
		srv.Stop()
	}
	s.wg.Wait()
}

// driver is the library's MainDriver: settings, logins, TLS (none).
type driver struct {
	s  *Server
	ln net.Listener
}

func (d *driver) GetSettings() (*ftpserver.Settings, error) {
	return &ftpserver.Settings{Listener: d.ln, Banner: "v6lab embedded FTP server", IdleTimeout: 60, ConnectionTimeout: 30,
		DefaultTransferType: ftpserver.TransferTypeBinary, DisableActiveMode: false, ActiveTransferPortNon20: true}, nil
}

func (d *driver) ClientConnected(ftpserver.ClientContext) (string, error) {
	return "v6lab embedded FTP server ready", nil
}

func (d *driver) ClientDisconnected(ftpserver.ClientContext) {}

func (d *driver) AuthUser(_ ftpserver.ClientContext, user, _ string) (ftpserver.ClientDriver, error) {
	if user == "" {
		return nil, errors.New("a user name is needed")
	}
	d.s.Logins.Add(1)
	return &genFS{s: d.s}, nil
}

func (d *driver) GetTLSConfig() (*tls.Config, error) { return nil, errors.New("no TLS") }

// Listed are the sizes the root directory lists (any size can be fetched).
var Listed = []string{"1K", "64K", "1M", "10M", "100M"}

// fileSize reads a generated file's size from its name: the last element
// is a byte count such as 1048576, 64K or 1M.
func fileSize(name string) (int64, error) {
	base := path.Base(path.Clean("/" + name))
	n, err := units.ParseSize(base)
	if err != nil || n > MaxFileSize {
		return 0, fs.ErrNotExist
	}
	return n, nil
}

// genFS is a read-only afero.Fs of generated files.
type genFS struct{ s *Server }

var errReadOnly = errors.New("the v6lab FTP server is read-only")

func (g *genFS) Name() string { return "v6lab-generated" }

func (g *genFS) Open(name string) (afero.File, error) {
	return g.OpenFile(name, os.O_RDONLY, 0)
}

func (g *genFS) OpenFile(name string, flag int, _ os.FileMode) (afero.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_TRUNC) != 0 {
		return nil, errReadOnly
	}
	if isRoot(name) {
		return &genFile{name: "/", dir: true}, nil
	}
	n, err := fileSize(name)
	if err != nil {
		return nil, err
	}
	return &genFile{name: name, size: n, s: g.s}, nil
}

func (g *genFS) Stat(name string) (os.FileInfo, error) {
	if isRoot(name) {
		return info{name: "/", dir: true}, nil
	}
	n, err := fileSize(name)
	if err != nil {
		return nil, err
	}
	return info{name: path.Base(name), size: n}, nil
}

func isRoot(name string) bool { c := path.Clean("/" + name); return c == "/" || c == "/files" }

func (g *genFS) Create(string) (afero.File, error)          { return nil, errReadOnly }
func (g *genFS) Mkdir(string, os.FileMode) error            { return errReadOnly }
func (g *genFS) MkdirAll(string, os.FileMode) error         { return errReadOnly }
func (g *genFS) Remove(string) error                        { return errReadOnly }
func (g *genFS) RemoveAll(string) error                     { return errReadOnly }
func (g *genFS) Rename(string, string) error                { return errReadOnly }
func (g *genFS) Chmod(string, os.FileMode) error            { return errReadOnly }
func (g *genFS) Chown(string, int, int) error               { return errReadOnly }
func (g *genFS) Chtimes(string, time.Time, time.Time) error { return errReadOnly }

// info is a generated file's (or the root's) FileInfo.
type info struct {
	name string
	size int64
	dir  bool
}

func (i info) Name() string { return i.name }
func (i info) Size() int64  { return i.size }
func (i info) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o555
	}
	return 0o444
}
func (i info) ModTime() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }

// genFile is an open generated file (content.Fill).
type genFile struct {
	name string
	size int64
	off  int64
	dir  bool
	s    *Server
	done bool
}

func (f *genFile) Read(p []byte) (int, error) {
	if f.dir {
		return 0, errors.New("is a directory")
	}
	if f.off >= f.size {
		if !f.done && f.s != nil {
			f.done = true
			f.s.Transfers.Add(1)
		}
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), f.size-f.off))
	content.Fill(p[:n], f.off)
	f.off += int64(n)
	return n, nil
}

func (f *genFile) ReadAt(p []byte, off int64) (int, error) {
	g := *f
	g.off, g.s = off, nil
	return g.Read(p)
}

func (f *genFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		f.off = offset
	case io.SeekCurrent:
		f.off += offset
	case io.SeekEnd:
		f.off = f.size + offset
	}
	if f.off < 0 {
		f.off = 0
		return 0, errors.New("negative offset")
	}
	return f.off, nil
}

func (f *genFile) Close() error { return nil }
func (f *genFile) Name() string { return f.name }
func (f *genFile) Stat() (os.FileInfo, error) {
	return info{name: path.Base(f.name), size: f.size, dir: f.dir}, nil
}

func (f *genFile) Readdir(int) ([]os.FileInfo, error) {
	if !f.dir {
		return nil, errors.New("not a directory")
	}
	var out []os.FileInfo
	for _, n := range Listed {
		size, _ := fileSize(n)
		out = append(out, info{name: n, size: size})
	}
	return out, nil
}

func (f *genFile) Readdirnames(n int) ([]string, error) {
	infos, err := f.Readdir(n)
	names := make([]string, len(infos))
	for i, fi := range infos {
		names[i] = fi.Name()
	}
	return names, err
}

func (f *genFile) Write([]byte) (int, error)          { return 0, errReadOnly }
func (f *genFile) WriteAt([]byte, int64) (int, error) { return 0, errReadOnly }
func (f *genFile) WriteString(string) (int, error)    { return 0, errReadOnly }
func (f *genFile) Sync() error                        { return nil }
func (f *genFile) Truncate(int64) error               { return errReadOnly }
