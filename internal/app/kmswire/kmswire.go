// Package kmswire builds the webhook signing keys on a KMS client, for the
// jwks and deliverer functions: constructors only. It links the KMS client
// and no other AWS client.
package kmswire

import (
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"genjobs/internal/app"
	"genjobs/internal/signing/kmssigner"
)

// Signer is the KMS key id (SIGNING_KEY_ID or SIGNING_PREVIOUS_KEY_ID)
// names, with a client built from d.AWS (locally, moto's KMS). It does no
// I/O: the key's public half is fetched on first use.
func Signer(d app.Deps, id string) *kmssigner.Signer {
	client := kms.NewFromConfig(d.Retries.KMS.Config(d.AWS, kms.ServiceID))
	k := kmssigner.New(client, id)
	k.Clock = d.Clock
	return k
}
