package smtp

import (
	"strconv"

	"v6lab/internal/proto"
)

// Command is smtp's face on the command line: v6lab probe smtp and
// v6lab serve smtp.
func (Protocol) Command() proto.Command {
	return proto.Command{
		Arg:   "HOST[:PORT]",
		Short: "Measure SMTP mail submission, DNS lookup included, over each path",
		Long: `probe smtp times sending one message per transaction to HOST (port 25 unless given): the
name is looked up with the path's record type, a new connection pinned to the path reads
the greeting, then EHLO, MAIL FROM, RCPT TO and DATA; the transaction ends on the server's
250 acceptance of the message ("250 ok queued as …"). A refusal at any step (4xx, 5xx)
is a failed transaction that keeps the server's reply. --to may hold %d, replaced by the
simulated user's number.`,
		Example: `  v6lab probe smtp mx.example.test --paths ipv4,ipv6 --conns 1,10,100,500 --to postmaster@example.test
  v6lab probe smtp 127.0.0.1:2525 --paths ipv4 --to 'user%d@v6lab.test' --size 64000
  v6lab probe smtp mx.example.test:587 --starttls
  v6lab probe smtp 192.0.2.25:2525 --starttls --tls-pin SHA256   # the SHA-256 v6lab serve smtp printed`,
		Flags: append(proto.DNSFlags(),
			proto.Flag{Name: "from", Option: "from", Kind: proto.KindString, Default: "v6lab@v6lab.test", Usage: "envelope sender"},
			proto.Flag{Name: "to", Option: "to", Kind: proto.KindString, Default: "user%d@v6lab.test", Usage: "envelope recipient (%d: the simulated user's number)"},
			proto.Flag{Name: "size", Option: "size", Default: strconv.Itoa(DefaultMessageSize), Usage: "message body size (bytes, or such as 100K)"},
			proto.Flag{Name: "starttls", Option: "starttls", Kind: proto.KindBool, Default: "false", Usage: "upgrade with STARTTLS before MAIL FROM"},
			proto.Flag{Name: "insecure", Option: "insecure", Kind: proto.KindBool, Default: "false", Usage: "with --starttls: accept any certificate"},
			proto.Flag{Name: "tls-pin", Option: proto.OptTLSPin, Kind: proto.KindString, Default: "", Usage: "with --starttls: accept exactly the certificate with this SHA-256 (what v6lab serve smtp prints)"},
		),
		Serve: proto.ServeCommand{
			Short: "Accept mail over SMTP, keeping and counting every message",
			Long: `serve smtp accepts any envelope on every --listen address until interrupted, keeps
every message it accepts (its Message-ID and size) and answers "250 2.0.0 OK: queued as
N". It offers STARTTLS with a fresh self-signed certificate, whose SHA-256 it prints
(a client elsewhere pins it: probe smtp --starttls --tls-pin SHA256). On exit it prints how many
messages it accepted and kept, so a run can be checked for lost mail.`,
			Example: `  v6lab serve smtp
  v6lab serve smtp --listen 0.0.0.0:2525 --listen [::]:2525
  v6lab probe smtp 192.0.2.25:2525 --starttls --tls-pin SHA256   # from the client host`,
			Listen: []string{"127.0.0.1:2525", "[::1]:2525"},
			Flags:  []proto.Flag{},
		},
	}
}

// SetArg puts the probe command's HOST[:PORT] into the options.
func (Protocol) SetArg(o *proto.Options, arg string) { o.URL = proto.ServerURL("smtp", arg) }
