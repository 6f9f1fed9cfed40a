package imap

import (
	"strconv"

	"v6lab/internal/proto"
)

// Command is imap's face on the command line: v6lab probe imap and
// v6lab serve imap.
func (Protocol) Command() proto.Command {
	return proto.Command{
		Arg:   "HOST[:PORT]",
		Short: "Measure IMAP mail retrieval, DNS lookup included, over each path",
		Long: `probe imap times mail retrievals from HOST (port 143 unless given): the name is looked up
with the path's record type, then simulated user i logs in as its own user (--user-format
with i mod --users + 1), selects INBOX and fetches message 1; the transaction ends on the
tagged OK of the FETCH. Literal sizes are checked against what arrives and bounded.`,
		Example: `  v6lab probe imap 127.0.0.1:1143 --paths ipv4 --conns 1,10,100,200 --users 500
  v6lab probe imap mail.example.test --user-format 'test%d' --password secret --users 50`,
		Flags: append(proto.DNSFlags(),
			proto.Flag{Name: "users", Option: "users", Kind: proto.KindInt, Default: strconv.Itoa(DefaultUsers), Usage: "users on the server: simulated user i logs in as user (i mod users)+1"},
			proto.Flag{Name: "user-format", Option: "user_format", Kind: proto.KindString, Default: "user%d", Usage: "user names, %d being the user's number"},
			proto.Flag{Name: "password", Option: "password", Kind: proto.KindString, Default: Password, Usage: "every user's password"},
		),
		Serve: proto.ServeCommand{
			Short: "Serve IMAP: users user1…userN, each with the same message in INBOX",
			Long: `serve imap holds --users users named user1 … userN, password "v6lab", each with the same
message of --size bytes in INBOX (the study's IMAP server), on every --listen address until
interrupted. Plaintext LOGIN is allowed: it is a test server.`,
			Example: `  v6lab serve imap
  v6lab serve imap --listen 0.0.0.0:1143 --listen [::]:1143 --users 500`,
			Listen: []string{"127.0.0.1:1143", "[::1]:1143"},
			Flags: []proto.Flag{
				{Name: "users", Option: "users", Kind: proto.KindInt, Default: strconv.Itoa(DefaultUsers), Usage: "number of users"},
				{Name: "size", Option: "size", Default: strconv.Itoa(MessageSize), Usage: "size of the message in each INBOX (bytes, or such as 4K)"},
			},
		},
	}
}

// SetArg puts the probe command's HOST[:PORT] into the options.
func (Protocol) SetArg(o *proto.Options, arg string) { o.URL = proto.ServerURL("imap", arg) }
