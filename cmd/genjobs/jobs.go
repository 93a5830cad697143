package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"

	"genjobs/client"
)

func outFlag(fs *flag.FlagSet) {
	fs.String("out", "", "write the first result file to `PATH`, or every one into DIR/")
}

func (c *cli) jobsGet(ctx context.Context, _ *flag.FlagSet, args []string) error {
	return c.printJobAfter(ctx, args, (*client.JobsService).Get)
}

// printJobAfter prints the job the argument names as do (a read or a
// cancellation) answers it.
func (c *cli) printJobAfter(ctx context.Context, args []string, do func(*client.JobsService, context.Context, string) (*client.Job, error)) error {
	id, cl, err := c.clientFor(args, "job id")
	if err != nil {
		return err
	}
	j, err := do(cl.Jobs, ctx, id)
	if err != nil {
		return err
	}
	c.print(j.RawJSON(), humanJob(j))
	return nil
}

func (c *cli) jobsWait(ctx context.Context, fs *flag.FlagSet, args []string) error {
	id, cl, err := c.clientFor(args, "job id")
	if err != nil {
		return err
	}
	return c.waitAndSave(ctx, cl, id, fs.Lookup("out").Value.String())
}

func (c *cli) jobsCancel(ctx context.Context, _ *flag.FlagSet, args []string) error {
	return c.printJobAfter(ctx, args, (*client.JobsService).Cancel)
}

func (c *cli) jobsDownload(ctx context.Context, fs *flag.FlagSet, args []string) error {
	id, cl, err := c.clientFor(args, "job id")
	if err != nil {
		return err
	}
	j, err := cl.Jobs.Get(ctx, id)
	if err != nil {
		return err
	}
	if j.Status != client.StatusCompleted {
		return fmt.Errorf("job %s is %s, not completed", j.ID, j.Status)
	}
	out := fs.Lookup("out").Value.String()
	if out == "" {
		out = j.FileName(0)
	}
	return c.save(ctx, cl, j, out)
}

func (c *cli) jobsDeliveries(ctx context.Context, _ *flag.FlagSet, args []string) error {
	id, cl, err := c.clientFor(args, "job id")
	if err != nil {
		return err
	}
	ds, err := cl.Jobs.Deliveries(ctx, id)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(map[string]any{"items": ds})
	c.print(raw, func(w io.Writer) {
		if len(ds) == 0 {
			fmt.Fprintln(w, "no delivery attempts")
		}
		for _, d := range ds {
			fmt.Fprintf(w, "#%d  %s", d.Attempt, d.At.Local().Format("2006-01-02 15:04:05"))
			if d.StatusCode != nil {
				fmt.Fprintf(w, "  answered %d", *d.StatusCode)
			}
			if d.Error != nil {
				fmt.Fprintf(w, "  %s", *d.Error)
			}
			if d.NextAttemptAt != nil {
				fmt.Fprintf(w, "  next %s", d.NextAttemptAt.Local().Format("2006-01-02 15:04:05"))
			}
			fmt.Fprintln(w)
		}
	})
	return nil
}

type listFlags struct {
	status string
	limit  int
	all    bool
}

func jobsListCommand() *command {
	var f listFlags
	return &command{
		name: "jobs list", args: "[--status S] [--limit N] [--all]",
		summary: "List the workspace's jobs, newest first: one page, or every page with --all; on a terminal a table with each job's endpoint and cost.",
		example: "genjobs jobs list --status failed --all",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.status, "status", "", "only jobs in this `state` (queued, processing, completed, failed, ...)")
			fs.IntVar(&f.limit, "limit", 0, "jobs per page, 1..1000 (the API's default: 100)")
			fs.BoolVar(&f.all, "all", false, "walk every page")
		},
		run: func(c *cli, ctx context.Context, _ *flag.FlagSet, args []string) error {
			cl, err := c.clientWithoutArgs(args)
			if err != nil {
				return err
			}
			p := client.ListParams{Status: client.Status(f.status), Limit: f.limit}
			if c.stdoutTTY && !c.asJSON {
				return c.jobTable(ctx, cl, p, f.all)
			}
			if !f.all {
				page, err := cl.Jobs.ListPage(ctx, p)
				if err != nil {
					return err
				}
				printPage(c, page.RawJSON(), page.Items, page.NextCursor, humanJob)
				return nil
			}
			return printEvery(c, cl.Jobs.List(ctx, p), (*client.Job).RawJSON, humanJob)
		},
	}
}

// printPage prints one page of a listing, and on a terminal says when more
// pages follow.
func printPage[T any](c *cli, raw json.RawMessage, items []T, next *string, human func(T) func(io.Writer)) {
	c.print(raw, func(w io.Writer) {
		for _, item := range items {
			human(item)(w)
		}
		if next != nil {
			fmt.Fprintln(w, "(more: --all lists every page)")
		}
	})
}

// printEvery prints every item of every page: one record a line (JSON
// Lines) off a terminal. It stops at the first error.
func printEvery[T any](c *cli, items iter.Seq2[T, error], raw func(T) json.RawMessage, human func(T) func(io.Writer)) error {
	for item, err := range items {
		if err != nil {
			return err
		}
		c.print(raw(item), human(item))
	}
	return nil
}

// jobTable prints jobs as a table (id, status, endpoint, created, cost),
// a page at a time: the endpoint and the cost come from each job's
// details, read a few at a time.
func (c *cli) jobTable(ctx context.Context, cl *client.Client, p client.ListParams, all bool) error {
	header := true
	for {
		page, err := cl.Jobs.ListPage(ctx, p)
		if err != nil {
			return err
		}
		rows, err := withDetails(ctx, cl, page.Items)
		if err != nil {
			return err
		}
		if len(rows) == 0 && header {
			fmt.Fprintln(c.stdout, "no jobs")
			return nil
		}
		printJobTable(c.stdout, rows, header)
		header = false
		if page.NextCursor == nil {
			return nil
		}
		if !all {
			fmt.Fprintln(c.stdout, "(more: --all lists every page)")
			return nil
		}
		p.Cursor = *page.NextCursor
	}
}
