package ftp

import "v6lab/internal/proto"

// Command is ftp's face on the command line: v6lab probe ftp and
// v6lab serve ftp.
func (Protocol) Command() proto.Command {
	return proto.Command{
		Arg:   "URL",
		Short: "Measure FTP file retrieval, DNS lookup included, over each path",
		Long: `probe ftp times file retrievals from URL (ftp://[user[:password]@]host[:port]/file): the
host name is looked up with the path's record type, a new control connection pinned to
the path logs in (anonymous unless the URL names a user), asks SIZE, opens a passive data
connection (EPSV on IPv6, PASV on IPv4, RFC 2428; a PASV reply naming another host is
refused), retrieves the file, and the transaction ends on the 226 reply with every byte
in. --active uses EPRT/PORT instead.`,
		Example: `  v6lab probe ftp ftp://ftp.example.test/pub/1M --paths ipv4,ipv6 --conns 1,10,100 --runs 11
  v6lab probe ftp ftp://v6lab:secret@127.0.0.1:2121/1M --paths ipv4 --active`,
		Flags: append(proto.DNSFlags(),
			proto.Flag{Name: "active", Option: "active", Kind: proto.KindBool, Default: "false", Usage: "active mode: EPRT/PORT, the server connects back"},
		),
		Serve: proto.ServeCommand{
			Short: "Serve generated files over FTP (any user logs in)",
			Long: `serve ftp answers FTP on every --listen address until interrupted. Any user name and
password log in; every file is generated on the fly, never stored: its name is its size
(/1M, /64K, /5879824, /files/2G). Passive (EPSV, PASV) and active (EPRT, PORT) transfers
work; uploads are refused.`,
			Example: `  v6lab serve ftp
  v6lab serve ftp --listen 0.0.0.0:2121 --listen [::]:2121`,
			Listen: []string{"127.0.0.1:2121", "[::1]:2121"},
			Flags:  []proto.Flag{},
		},
	}
}

// SetArg puts the probe command's URL into the options.
func (Protocol) SetArg(o *proto.Options, arg string) { o.URL = arg }
