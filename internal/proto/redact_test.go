package proto

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// TestRedactArgsMasksPasswords: a url's password and a secret flag's
// value (either form) are masked; everything else is kept as given.
func TestRedactArgsMasksPasswords(t *testing.T) {
	in := []string{"v6lab", "probe", "ftp", "ftp://v6lab:s3cretpw@127.0.0.1:12121/64K", "--password", "imapS3cret",
		"--password=other", "--runs", "3", "http://user@host/"}
	want := []string{"v6lab", "probe", "ftp", "ftp://v6lab:xxxxx@127.0.0.1:12121/64K", "--password", "xxxxx",
		"--password=xxxxx", "--runs", "3", "http://user@host/"}
	if got := RedactArgs(in, map[string]bool{"password": true}); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if in[3] != "ftp://v6lab:s3cretpw@127.0.0.1:12121/64K" {
		t.Error("the arguments were changed in place")
	}
}

// TestFlagParamsMaskSecrets: the parameters a result records from the
// flags mask a secret option's value, not its public default.
func TestFlagParamsMaskSecrets(t *testing.T) {
	type opts struct {
		Password string `opt:"password,default=v6lab,secret"`
		User     string `opt:"user,default=u"`
	}
	for _, tc := range []struct{ given, want string }{{"s3cret", Mask}, {"", "v6lab"}} {
		var o opts
		fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
		RegisterFlags(fl, &o)
		args := []string{"--user", "me"}
		if tc.given != "" {
			args = append(args, "--password", tc.given)
		}
		if err := fl.Parse(args); err != nil {
			t.Fatal(err)
		}
		if p := FlagParams(fl, &o); p["password"] != tc.want || p["user"] != "me" {
			t.Errorf("password %q: params %v", tc.given, p)
		}
	}
}
