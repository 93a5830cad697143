package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"genjobs/client"
)

func (c *cli) assetsUpload(ctx context.Context, _ *flag.FlagSet, args []string) error {
	file, cl, err := c.clientFor(args, "file")
	if err != nil {
		return err
	}
	u, err := c.upload(ctx, cl, file)
	if err != nil {
		return err
	}
	raw, _ := jsonObject("asset_url", u)
	c.print(raw, func(w io.Writer) { fmt.Fprintln(w, u) })
	return nil
}

func usageCommand() *command {
	var days int
	return &command{
		name: "usage", args: "[--days N]", summary: "Show what completed jobs cost, by day and by model.",
		example: "genjobs usage --days 30",
		flags:   func(fs *flag.FlagSet) { fs.IntVar(&days, "days", 7, "the last `N` days, 1..90") },
		run: func(c *cli, ctx context.Context, _ *flag.FlagSet, args []string) error {
			cl, err := c.clientWithoutArgs(args)
			if err != nil {
				return err
			}
			u, err := cl.Usage(ctx, days)
			if err != nil {
				return err
			}
			c.print(u.RawJSON(), func(w io.Writer) {
				fmt.Fprintf(w, "%s USD from %s to %s\n", u.TotalUSD, u.From.Local().Format("2006-01-02"), u.To.Local().Format("2006-01-02"))
				for _, m := range u.ByModel {
					fmt.Fprintf(w, "  %-45s %4d jobs  %s USD\n", m.Path, m.Jobs, m.USD)
				}
			})
			return nil
		},
	}
}

func stylesListCommand() *command {
	var p client.StyleParams
	var ids string
	var all bool
	return &command{
		name: "styles list", args: "[--filter F] [--user U] [--ids a,b] [--model M] [--liked] [--limit N] [--all]",
		summary: "List the styles you can see: one page, or every page with --all.",
		example: "genjobs styles list --filter service --all",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&p.Filter, "filter", "", "all, user, community, service, shared, unapproved, editor, gallery or public")
			fs.StringVar(&p.User, "user", "", "only the styles of this owner `id`")
			fs.StringVar(&ids, "ids", "", "only these style ids, comma-separated")
			fs.StringVar(&p.Model, "model", "", "only styles usable with this `model`")
			fs.BoolVar(&p.Liked, "liked", false, "only styles you liked")
			fs.IntVar(&p.Limit, "limit", 0, "styles per page, 1..1000")
			fs.BoolVar(&all, "all", false, "walk every page")
		},
		run: func(c *cli, ctx context.Context, _ *flag.FlagSet, args []string) error {
			cl, err := c.clientWithoutArgs(args)
			if err != nil {
				return err
			}
			if ids != "" {
				p.IDs = strings.Split(ids, ",")
			}
			human := func(s *client.Style) func(io.Writer) {
				return func(w io.Writer) { fmt.Fprintf(w, "%-28s %s  (%s)\n", s.ID, s.Title, strings.Join(s.Models, ", ")) }
			}
			if !all {
				page, err := cl.Styles.ListPage(ctx, p)
				if err != nil {
					return err
				}
				printPage(c, page.RawJSON(), page.Items, page.NextCursor, human)
				return nil
			}
			raw := func(s *client.Style) json.RawMessage { b, _ := jsonMarshal(s); return b }
			return printEvery(c, cl.Styles.List(ctx, p), raw, human)
		},
	}
}

func (c *cli) stylesShare(ctx context.Context, _ *flag.FlagSet, args []string) error {
	id, cl, err := c.clientFor(args, "style id")
	if err != nil {
		return err
	}
	l, err := cl.Styles.ShareLink(ctx, id)
	if err != nil {
		return err
	}
	raw, _ := jsonMarshal(l)
	c.print(raw, func(w io.Writer) { fmt.Fprintln(w, l.URL) })
	return nil
}

func webhookListenCommand() *command {
	var port int
	var self string
	return &command{
		name: "webhook listen", args: "[--port P] [--url URL]",
		summary: "Receive webhooks on this machine: verify each delivery against the API's JWKS and print it (Ctrl-C stops).",
		example: "genjobs webhook listen --port 9000   # then: genjobs generate ... --webhook-url http://127.0.0.1:9000/hooks",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&port, "port", 9000, "the `port` to listen on, on 127.0.0.1 (0 picks a free one)")
			fs.StringVar(&self, "url", "", "the webhook `URL` the jobs were given, byte for byte (default http://127.0.0.1:PORT/hooks)")
		},
		run: func(c *cli, ctx context.Context, _ *flag.FlagSet, args []string) error {
			cl, err := c.clientWithoutArgs(args)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return usagef("cannot listen on port %d: %v", port, err)
			}
			defer ln.Close()
			if self == "" {
				self = "http://" + ln.Addr().String() + "/hooks"
			}
			v := cl.WebhookVerifier(self)
			v.OnRefusal = func(r *http.Request, err error) {
				fmt.Fprintf(c.stderr, "refused a delivery from %s: %v\n", r.RemoteAddr, err)
			}
			srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: v.Handler(func(_ context.Context, ev *client.WebhookEvent) error {
				c.print(ev.Body, func(w io.Writer) {
					fmt.Fprintf(w, "%s  verified delivery %s\n", time.Now().Format("15:04:05"), ev.ID)
					humanJob(ev.Job)(w)
				})
				return nil
			})}
			fmt.Fprintf(c.stderr, "Listening on %s; verifying against %s/.well-known/jwks.json\nCreate jobs with --webhook-url %s\n", ln.Addr(), cl.BaseURL(), self)
			go func() {
				<-ctx.Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		},
	}
}
