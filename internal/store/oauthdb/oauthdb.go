// Package oauthdb keeps the authorization server's state in the service's
// table: the OAuth clients that registered, the authorization codes, the
// grants (one per connection a person approved) and the refresh tokens.
//
// Items:
//
//	OAUTHCLIENT#<client_id> / CLIENT          a registered client (its secret hashed)
//	OAUTHCODE#<sha256(code)> / CODE           a code: single use, valid 60 s
//	OAUTHGRANT#<grant_id> / GRANT             a connection: client, person, workspace
//	OAUTHREFRESH#<sha256(token)> / REFRESH    a refresh token of a grant
//	OAUTHLIST#WS#<ws> / GRANT#<created>#<id>  a workspace's grants
//	OAUTHLIST#USER#<user> / GRANT#<created>#<id>  a person's grants
//
// Codes and refresh tokens are stored by their SHA-256 only (they are 256
// random bits, so a plain hash is enough, as for API tokens); a client's
// secret likewise. Every write is conditional and lets a retry of a write
// whose answer was lost recognise its own success: puts carry a write id of
// their own, a code's redemption names the grant it creates, a refresh
// token's rotation names its successor.
package oauthdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/store"
)

// Lifetimes.
const (
	// CodeLifetime is how long an authorization code can be redeemed.
	CodeLifetime = 60 * time.Second
	// RefreshLifetime is how long a refresh token can be used; each use
	// issues a new one for as long again.
	RefreshLifetime = 30 * 24 * time.Hour
	// keepUsed is how long a redeemed code or a rotated refresh token stays
	// in the table after it can no longer be used, so that a replay is
	// still recognised (and revokes its grant) rather than unknown.
	keepUsed = 24 * time.Hour
)

// Why a code or refresh token was refused. The authorization server answers
// each with invalid_grant.
var (
	// ErrNotFound: no such client, code, grant or refresh token.
	ErrNotFound = errors.New("oauthdb: not found")
	// ErrExpired: the code or refresh token is past its lifetime.
	ErrExpired = errors.New("oauthdb: expired")
	// ErrReplayed: the code was already redeemed, or the refresh token
	// already rotated; the grant they led to is now revoked.
	ErrReplayed = errors.New("oauthdb: used twice; its grant is revoked")
	// ErrRevoked: the grant was revoked.
	ErrRevoked = errors.New("oauthdb: grant revoked")
)

// Auth methods of a client at the token endpoint.
const (
	AuthNone       = "none"               // a public client: PKCE is its only proof
	AuthSecretPost = "client_secret_post" // a confidential client: its secret in the form
)

// Client is a registered client.
type Client struct {
	ID           string    `dynamodbav:"client_id"`
	Name         string    `dynamodbav:"client_name"`
	RedirectURIs []string  `dynamodbav:"redirect_uris"`
	AuthMethod   string    `dynamodbav:"auth_method"`
	SecretHash   string    `dynamodbav:"secret_hash,omitempty"`
	CreatedAt    time.Time `dynamodbav:"created_at"`
}

// Code is what an authorization code stands for: the request the person
// approved.
type Code struct {
	ClientID    string `dynamodbav:"client_id"`
	RedirectURI string `dynamodbav:"redirect_uri"`
	// Challenge is the PKCE S256 code challenge.
	Challenge   string    `dynamodbav:"code_challenge"`
	Resource    string    `dynamodbav:"resource"`
	Scope       string    `dynamodbav:"scope"`
	UserID      string    `dynamodbav:"user_id"`
	WorkspaceID string    `dynamodbav:"workspace_id"`
	CreatedAt   time.Time `dynamodbav:"created_at"`
	// GrantID is the grant the code's redemption created; empty until then.
	GrantID string `dynamodbav:"grant_id,omitempty"`
}

// Grant is one connection: a client acting for a person on a workspace,
// from approval until revocation.
type Grant struct {
	ID          string    `dynamodbav:"grant_id"`
	ClientID    string    `dynamodbav:"client_id"`
	ClientName  string    `dynamodbav:"client_name"`
	RedirectURI string    `dynamodbav:"redirect_uri"`
	UserID      string    `dynamodbav:"user_id"`
	WorkspaceID string    `dynamodbav:"workspace_id"`
	Scope       string    `dynamodbav:"scope"`
	Resource    string    `dynamodbav:"resource"`
	CreatedAt   time.Time `dynamodbav:"created_at"`
	// LastUsedAt is the grant's creation or its last refresh.
	LastUsedAt time.Time  `dynamodbav:"last_used_at"`
	RevokedAt  *time.Time `dynamodbav:"revoked_at,omitempty"`
}

// Live reports a grant not revoked.
func (g Grant) Live() bool { return g.RevokedAt == nil }

// DB is the store with the OAuth items besides.
type DB struct {
	*store.Store
}

// New returns the OAuth items on st's table. It does no I/O.
func New(st *store.Store) *DB { return &DB{Store: st} }

// Hash is the hex SHA-256 under which a code, refresh token or client
// secret is stored.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewID returns prefix and 128 random bits, hex.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// NewSecret returns 256 random bits, hex: a code, refresh token or client
// secret.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

const (
	clientPK  = "OAUTHCLIENT#"
	codePK    = "OAUTHCODE#"
	grantPK   = "OAUTHGRANT#"
	refreshPK = "OAUTHREFRESH#"
)

// clientItem is a Client as stored.
type clientItem struct {
	PK, SK string
	Client
	WriteID string `dynamodbav:"write_id"`
}

// RegisterClient stores a new client. Its id must be new (NewID).
func (s *DB) RegisterClient(ctx context.Context, c Client) error {
	return s.putOnce(ctx, clientItem{PK: clientPK + c.ID, SK: "CLIENT", Client: c, WriteID: NewID("")})
}

// ClientByID reads a registered client.
func (s *DB) ClientByID(ctx context.Context, id string) (Client, error) {
	var it clientItem
	if err := s.get(ctx, clientPK+id, "CLIENT", &it); err != nil {
		return Client{}, err
	}
	return it.Client, nil
}

// codeItem is a Code as stored.
type codeItem struct {
	PK, SK string
	Code
	ValidUntilMS int64      `dynamodbav:"valid_until_ms"`
	UsedAt       *time.Time `dynamodbav:"used_at,omitempty"`
	WriteID      string     `dynamodbav:"write_id"`
	ExpiresAt    int64      `dynamodbav:"expires_at"` // TTL
}

// IssueCode stores code (the secret itself; only its hash is written) for
// c, valid CodeLifetime from c.CreatedAt.
func (s *DB) IssueCode(ctx context.Context, code string, c Code) error {
	until := c.CreatedAt.Add(CodeLifetime)
	c.GrantID = ""
	return s.putOnce(ctx, codeItem{
		PK: codePK + Hash(code), SK: "CODE", Code: c,
		ValidUntilMS: until.UnixMilli(), WriteID: NewID(""),
		ExpiresAt: until.Add(keepUsed).Unix(),
	})
}

// Code reads what code stands for, unless it is unknown (ErrNotFound),
// already redeemed (ErrReplayed: the grant its first redemption created is
// revoked now) or expired at now (ErrExpired).
func (s *DB) Code(ctx context.Context, code string, now time.Time) (Code, error) {
	var it codeItem
	if err := s.get(ctx, codePK+Hash(code), "CODE", &it); err != nil {
		return Code{}, err
	}
	if it.UsedAt != nil {
		return Code{}, s.replayed(ctx, it.GrantID, now)
	}
	if now.UnixMilli() >= it.ValidUntilMS {
		return Code{}, ErrExpired
	}
	return it.Code, nil
}

// grantItem is a Grant as stored.
type grantItem struct {
	PK, SK string
	Grant
}

// refreshItem is a refresh token as stored.
type refreshItem struct {
	PK, SK       string
	GrantID      string     `dynamodbav:"grant_id"`
	ClientID     string     `dynamodbav:"client_id"`
	IssuedAt     time.Time  `dynamodbav:"issued_at"`
	ValidUntilMS int64      `dynamodbav:"valid_until_ms"`
	RotatedAt    *time.Time `dynamodbav:"rotated_at,omitempty"`
	NextHash     string     `dynamodbav:"next_hash,omitempty"`
	ExpiresAt    int64      `dynamodbav:"expires_at"` // TTL
}

func newRefresh(token string, g Grant, now time.Time) refreshItem {
	until := now.Add(RefreshLifetime)
	return refreshItem{
		PK: refreshPK + Hash(token), SK: "REFRESH", GrantID: g.ID, ClientID: g.ClientID,
		IssuedAt: now, ValidUntilMS: until.UnixMilli(), ExpiresAt: until.Add(keepUsed).Unix(),
	}
}

// Redeem turns code into grant g (g.ID new, from NewID) with its first
// refresh token refresh, in one transaction: the code is marked used, the
// grant, the refresh token and the grant's places in its workspace's and
// its person's lists are written. A code redeemed meanwhile by
// another request is ErrReplayed (and that redemption's grant is revoked);
// a retry of this very redemption whose answer was lost succeeds.
func (s *DB) Redeem(ctx context.Context, code string, g Grant, refresh string, now time.Time) error {
	g.LastUsedAt = now
	gi, err := attributevalue.MarshalMap(grantItem{PK: grantPK + g.ID, SK: "GRANT", Grant: g})
	if err != nil {
		return err
	}
	ri, err := attributevalue.MarshalMap(newRefresh(refresh, g, now))
	if err != nil {
		return err
	}
	table := aws.String(s.Table())
	_, err = s.Client().TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                           table,
			Key:                                 store.Key(codePK+Hash(code), "CODE"),
			UpdateExpression:                    aws.String("SET used_at = :now, grant_id = :g"),
			ConditionExpression:                 aws.String("attribute_exists(PK) AND (attribute_not_exists(used_at) OR grant_id = :g) AND valid_until_ms > :ms"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now": stamp(now), ":g": str(g.ID), ":ms": store.Number(now.UnixMilli()),
			},
		}},
		{Put: &types.Put{
			TableName: table, Item: gi,
			ConditionExpression:       aws.String("attribute_not_exists(PK) OR client_id = :c"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": str(g.ClientID)},
		}},
		{Put: &types.Put{
			TableName: table, Item: ri,
			ConditionExpression:       aws.String("attribute_not_exists(PK) OR grant_id = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": str(g.ID)},
		}},
		listPut(table, wsList(g.WorkspaceID), g),
		listPut(table, userList(g.UserID), g),
	}})
	if err == nil {
		return nil
	}
	if store.CancelReason(err, 0) != "ConditionalCheckFailed" {
		return fmt.Errorf("redeem code: %w", err)
	}
	var it codeItem
	old := cancelItem(err, 0)
	if old == nil {
		return ErrNotFound
	}
	if err := attributevalue.UnmarshalMap(old, &it); err != nil {
		return fmt.Errorf("decode code: %w", err)
	}
	if it.UsedAt != nil {
		return s.replayed(ctx, it.GrantID, now)
	}
	return ErrExpired
}

// replayed revokes the grant a used code or rotated refresh token led to
// and answers ErrReplayed.
func (s *DB) replayed(ctx context.Context, grantID string, now time.Time) error {
	if grantID != "" {
		if err := s.RevokeGrant(ctx, grantID, now); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("revoke the grant of a replayed code: %w", err)
		}
	}
	return ErrReplayed
}

// Grant reads a grant (revoked ones too: see Grant.Live).
func (s *DB) Grant(ctx context.Context, id string) (Grant, error) {
	var it grantItem
	if err := s.get(ctx, grantPK+id, "GRANT", &it); err != nil {
		return Grant{}, err
	}
	return it.Grant, nil
}

// RevokeGrant revokes grant id at now; revoking it again keeps the first
// time. Its refresh tokens are refused from then on, and its access tokens
// once the resource's cache of the grant lapses.
func (s *DB) RevokeGrant(ctx context.Context, id string, now time.Time) error {
	_, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Table()),
		Key:                       store.Key(grantPK+id, "GRANT"),
		UpdateExpression:          aws.String("SET revoked_at = if_not_exists(revoked_at, :now)"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": stamp(now)},
	})
	if store.ConditionFailed(err) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("revoke grant: %w", err)
	}
	return nil
}

// RefreshGrant reads the grant refresh token belongs to, rotated or not (a
// revocation request may name an old one), and whether the token can still
// be used at now: neither rotated nor expired.
func (s *DB) RefreshGrant(ctx context.Context, token string, now time.Time) (g Grant, usable bool, err error) {
	var it refreshItem
	if err := s.get(ctx, refreshPK+Hash(token), "REFRESH", &it); err != nil {
		return Grant{}, false, err
	}
	g, err = s.Grant(ctx, it.GrantID)
	if err != nil {
		return Grant{}, false, err
	}
	return g, it.RotatedAt == nil && now.UnixMilli() < it.ValidUntilMS, nil
}

// Rotate replaces refresh token old with next: old is marked rotated (naming
// its successor), next is written, and the grant's last use set, in one
// transaction, on the conditions that old was neither rotated nor expired
// and the grant is live. It returns the grant. An old token used again is
// ErrReplayed and revokes the grant: whoever holds it, the client or a
// thief, the other one holds its successor. A retry of this very rotation
// whose answer was lost succeeds.
func (s *DB) Rotate(ctx context.Context, old, next string, now time.Time) (Grant, error) {
	var it refreshItem
	if err := s.get(ctx, refreshPK+Hash(old), "REFRESH", &it); err != nil {
		return Grant{}, err
	}
	g, err := s.Grant(ctx, it.GrantID)
	if err != nil {
		return Grant{}, err
	}
	if !g.Live() {
		return Grant{}, ErrRevoked
	}
	ni, err := attributevalue.MarshalMap(newRefresh(next, g, now))
	if err != nil {
		return Grant{}, err
	}
	table := aws.String(s.Table())
	nh := str(Hash(next))
	_, err = s.Client().TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                           table,
			Key:                                 store.Key(refreshPK+Hash(old), "REFRESH"),
			UpdateExpression:                    aws.String("SET rotated_at = :now, next_hash = :nh"),
			ConditionExpression:                 aws.String("(attribute_not_exists(rotated_at) AND valid_until_ms > :ms) OR next_hash = :nh"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now": stamp(now), ":nh": nh, ":ms": store.Number(now.UnixMilli()),
			},
		}},
		{Update: &types.Update{
			TableName:                 table,
			Key:                       store.Key(grantPK+g.ID, "GRANT"),
			UpdateExpression:          aws.String("SET last_used_at = :now"),
			ConditionExpression:       aws.String("attribute_exists(PK) AND attribute_not_exists(revoked_at)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": stamp(now)},
		}},
		{Put: &types.Put{
			TableName: table, Item: ni,
			ConditionExpression:       aws.String("attribute_not_exists(PK) OR grant_id = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": str(g.ID)},
		}},
	}})
	switch {
	case err == nil:
		return g, nil
	case store.CancelReason(err, 1) == "ConditionalCheckFailed":
		return Grant{}, ErrRevoked
	case store.CancelReason(err, 0) != "ConditionalCheckFailed":
		return Grant{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	var was refreshItem
	if err := attributevalue.UnmarshalMap(cancelItem(err, 0), &was); err != nil {
		return Grant{}, fmt.Errorf("decode refresh token: %w", err)
	}
	if was.RotatedAt != nil {
		return Grant{}, s.replayed(ctx, g.ID, now)
	}
	return Grant{}, ErrExpired
}

// putOnce writes item (with a write_id of its own) unless its key exists
// under another write: a retry whose answer was lost meets its own write
// and succeeds.
func (s *DB) putOnce(ctx context.Context, item any) error {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return err
	}
	_, err = s.Client().PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.Table()),
		Item:                      av,
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR write_id = :w"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":w": av["write_id"]},
	})
	if store.ConditionFailed(err) {
		return store.ErrExists
	}
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	return nil
}

// get reads one item strongly consistently: ErrNotFound when there is none.
func (s *DB) get(ctx context.Context, pk, sk string, out any) error {
	err := s.Get(ctx, pk, sk, out)
	if errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// stamp is t as attributevalue writes a time.Time (RFC 3339 with
// nanoseconds), so that an item read back decodes it.
func stamp(t time.Time) types.AttributeValue {
	return str(t.UTC().Format(time.RFC3339Nano))
}

// cancelItem is the item a cancelled transaction returned for item i (with
// ReturnValuesOnConditionCheckFailure ALL_OLD), or nil.
func cancelItem(err error, i int) map[string]types.AttributeValue {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || i >= len(tce.CancellationReasons) {
		return nil
	}
	return tce.CancellationReasons[i].Item
}
