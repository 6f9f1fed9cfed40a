package imap

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	goimap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-message/textproto"
)

// store is what the embedded server holds: users user1 … userN, one
// password, and one message that every user's INBOX shows. The message is
// one buffer, read by every connection and never copied for a whole-message
// FETCH, so the server's memory is the message's size whatever the number
// of users or connections (a store per user would hold users × size). The
// mailboxes are read-only: a test server's INBOX stays as it started.
type store struct {
	users    int
	password string
	msg      []byte
	envelope *goimap.Envelope
	body     goimap.BodyStructure
	date     time.Time
}

func newStore(users int, password string, msg []byte) (*store, error) {
	h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(msg)))
	if err != nil {
		return nil, fmt.Errorf("imap: the message's header: %w", err)
	}
	return &store{users: users, password: password, msg: msg, envelope: imapserver.ExtractEnvelope(h),
		body: imapserver.ExtractBodyStructure(bytes.NewReader(msg)), date: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}, nil
}

// user is the number of a user name of the store (user1 … userN), 0 if
// none.
func (st *store) user(name string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "user"))
	if !strings.HasPrefix(name, "user") || err != nil || n < 1 || n > st.users || name != "user"+strconv.Itoa(n) {
		return 0
	}
	return n
}

// inbox is the only mailbox.
const inbox = "INBOX"

var errReadOnly = &goimap.Error{Type: goimap.StatusResponseTypeNo, Text: "v6lab's test server is read-only"}

// served is one connection's session of the store.
type served struct{ st *store }

var _ imapserver.Session = (*served)(nil)

func (s *served) Close() error { return nil }

func (s *served) Login(name, password string) error {
	if s.st.user(name) == 0 || password != s.st.password {
		return imapserver.ErrAuthFailed
	}
	return nil
}

func noMailbox(name string) error {
	return &goimap.Error{Type: goimap.StatusResponseTypeNo, Code: goimap.ResponseCodeNonExistent, Text: "no mailbox " + name}
}

func (s *served) Select(name string, _ *goimap.SelectOptions) (*goimap.SelectData, error) {
	if !strings.EqualFold(name, inbox) {
		return nil, noMailbox(name)
	}
	return &goimap.SelectData{Flags: []goimap.Flag{goimap.FlagSeen}, PermanentFlags: []goimap.Flag{},
		NumMessages: 1, FirstUnseenSeqNum: 1, UIDNext: 2, UIDValidity: 1}, nil
}

func (s *served) Status(name string, _ *goimap.StatusOptions) (*goimap.StatusData, error) {
	if !strings.EqualFold(name, inbox) {
		return nil, noMailbox(name)
	}
	one, size := uint32(1), int64(len(s.st.msg))
	return &goimap.StatusData{Mailbox: inbox, NumMessages: &one, NumUnseen: &one, UIDNext: 2, UIDValidity: 1, Size: &size}, nil
}

func (s *served) List(w *imapserver.ListWriter, ref string, patterns []string, _ *goimap.ListOptions) error {
	for _, p := range patterns {
		if imapserver.MatchList(inbox, '/', ref, p) {
			return w.WriteList(&goimap.ListData{Delim: '/', Mailbox: inbox})
		}
	}
	return nil
}

// Fetch writes message 1 when the set names it: a whole-message section
// straight from the shared buffer, any other part extracted from it.
func (s *served) Fetch(w *imapserver.FetchWriter, set goimap.NumSet, o *goimap.FetchOptions) error {
	if !namesOne(set) {
		return nil
	}
	r := w.CreateMessage(1)
	r.WriteUID(1)
	if o.Flags {
		r.WriteFlags(nil)
	}
	if o.InternalDate {
		r.WriteInternalDate(s.st.date)
	}
	if o.RFC822Size {
		r.WriteRFC822Size(int64(len(s.st.msg)))
	}
	if o.Envelope {
		r.WriteEnvelope(s.st.envelope)
	}
	if o.BodyStructure != nil {
		r.WriteBodyStructure(s.st.body)
	}
	for _, bs := range o.BodySection {
		if err := writeSection(r.WriteBodySection, bs, s.section(bs)); err != nil {
			return err
		}
	}
	for _, bs := range o.BinarySection {
		b := imapserver.ExtractBinarySection(bytes.NewReader(s.st.msg), bs)
		if err := writeSection(r.WriteBinarySection, bs, b); err != nil {
			return err
		}
	}
	return r.Close()
}

// section is a body section's bytes: the shared buffer itself for the
// whole message (BODY[], what clients fetch).
func (s *served) section(bs *goimap.FetchItemBodySection) []byte {
	if bs.Specifier == goimap.PartSpecifierNone && len(bs.Part) == 0 && bs.Partial == nil &&
		len(bs.HeaderFields) == 0 && len(bs.HeaderFieldsNot) == 0 {
		return s.st.msg
	}
	return imapserver.ExtractBodySection(bytes.NewReader(s.st.msg), bs)
}

func writeSection[T any](open func(T, int64) io.WriteCloser, item T, b []byte) error {
	wc := open(item, int64(len(b)))
	if _, err := wc.Write(b); err != nil {
		wc.Close()
		return err
	}
	return wc.Close()
}

// namesOne says whether a sequence or UID set holds 1, the only message
// ("*" being 1).
func namesOne(set goimap.NumSet) bool {
	one := func(start, stop uint32) bool { return min(max(start, 1), max(stop, 1)) == 1 }
	switch set := set.(type) {
	case goimap.SeqSet:
		for _, r := range set {
			if one(r.Start, r.Stop) {
				return true
			}
		}
	case goimap.UIDSet:
		for _, r := range set {
			if one(uint32(r.Start), uint32(r.Stop)) {
				return true
			}
		}
	}
	return false
}

func (s *served) Search(imapserver.NumKind, *goimap.SearchCriteria, *goimap.SearchOptions) (*goimap.SearchData, error) {
	return nil, &goimap.Error{Type: goimap.StatusResponseTypeNo, Text: "v6lab's test server does not search: INBOX holds message 1"}
}

func (s *served) Poll(*imapserver.UpdateWriter, bool) error                   { return nil }
func (s *served) Idle(_ *imapserver.UpdateWriter, stop <-chan struct{}) error { <-stop; return nil }
func (s *served) Unselect() error                                             { return nil }
func (s *served) Subscribe(string) error                                      { return nil }
func (s *served) Unsubscribe(string) error                                    { return nil }

// The mailboxes are read-only.
func (s *served) Create(string, *goimap.CreateOptions) error { return errReadOnly }
func (s *served) Delete(string) error                        { return errReadOnly }
func (s *served) Rename(string, string, *goimap.RenameOptions) error {
	return errReadOnly
}
func (s *served) Append(string, goimap.LiteralReader, *goimap.AppendOptions) (*goimap.AppendData, error) {
	return nil, errReadOnly
}
func (s *served) Expunge(*imapserver.ExpungeWriter, *goimap.UIDSet) error { return errReadOnly }
func (s *served) Store(*imapserver.FetchWriter, goimap.NumSet, *goimap.StoreFlags, *goimap.StoreOptions) error {
	return errReadOnly
}
func (s *served) Copy(goimap.NumSet, string) (*goimap.CopyData, error) { return nil, errReadOnly }
