package store

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/awsclient"
)

// NewClient builds the DynamoDB client of cfg, following p (with
// BusyTransaction), at the endpoint cfg names for DynamoDB
// (awsclient.Policy.Config). A client whose endpoint is set (DynamoDB
// Local) skips the CRC32 check of answers, which DynamoDB Local omits on
// errors (docs/local-stack.md, "Emulator and SDK traps").
func NewClient(cfg aws.Config, p awsclient.Policy) *dynamodb.Client {
	return dynamodb.NewFromConfig(p.Config(cfg, dynamodb.ServiceID, BusyTransaction), func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = o.BaseEndpoint != nil
	})
}

// busyReasons are the reasons of a cancelled transaction that met throttling
// or another transaction rather than a refusal. (The store retries
// conflicts itself; one that outlasts its retries is an outage too.)
var busyReasons = map[string]bool{
	"ThrottlingError": true, "ProvisionedThroughputExceeded": true, "TransactionConflict": true,
}

// BusyTransaction reports a transaction cancelled for a busy reason as an
// outage (awsclient.Classifier): its code is
// TransactionCanceledException/<reason>.
func BusyTransaction(err error) (code string, unavailable bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return "", false
	}
	for _, r := range tce.CancellationReasons {
		if c := aws.ToString(r.Code); busyReasons[c] {
			return "TransactionCanceledException/" + c, true
		}
	}
	return "", false
}
