/// Every limit the channel enforces, in one place. Each is named with its qualifier last and says why it
/// has the value it has; a peer that exceeds one is refused, never buffered.
public enum ChannelLimits {
    /// The largest application payload in one record: TLS 1.3's record limit (RFC 8446 §5.1). Payment
    /// messages are under 2 KiB, so this leaves room for batches without letting a peer make us buffer more.
    public static let recordPayloadByteCountMax = 16_384

    /// The largest frame body. A full record is its payload plus 26 bytes (kind, type, counter, tag); the
    /// largest handshake message (the reveal, with an X-Wing contribution and ciphertext) is 2,361 bytes.
    /// A frame length above this is refused before anything is allocated for it.
    public static let frameByteCountMax = recordPayloadByteCountMax + 256

    /// Records one key may seal in one direction: TLS 1.3's AES-GCM margin (RFC 8446 §5.5 allows about
    /// 2^24.5 full-size records for a 2^-57 safety margin). The channel has no rekeying; a session that
    /// reaches this closes and the wallets make a new one.
    public static let recordCountMax: UInt64 = 1 << 24

    /// How long a whole handshake may take. It is three round trips between two wallets a few metres
    /// apart plus two X-Wing key generations, encapsulations and decapsulations (about 1 ms of work); ten
    /// seconds allows a slow radio link and still drops a stalled peer before the user gives up.
    public static let handshakeTimeoutSeconds = 10.0

    /// How long a TCP connect may take. On a local network a connect either completes in milliseconds or
    /// never; five seconds gives a user a prompt answer.
    public static let connectTimeoutSeconds = 5.0

    /// The default wait for the next record. A payment conversation waits on a person confirming on a
    /// token (tens of seconds), so this is longer than any one step and short enough to free a dead link.
    public static let receiveTimeoutSecondsDefault = 120.0

    /// How long a send may wait for a peer that is not reading (backpressure). Longer than any pause of
    /// an honest peer in the middle of a record, short enough that a stuck peer cannot hold a thread.
    public static let sendTimeoutSeconds = 10.0

    /// Suites one contribution may list. Version 1 defines one suite; eight leaves room for later
    /// versions while bounding what a peer can make us parse.
    public static let suiteCountMax = 8

    /// The largest KEM public key a contribution may carry. X-Wing's is 1,216 bytes; 4 KiB also fits
    /// ML-KEM-1024 (1,568) should a later suite use it, and bounds what a peer can make us parse.
    public static let publicKeyByteCountMax = 4_096

    /// The largest KEM ciphertext a handshake message may carry. X-Wing's is 1,120 bytes; the same
    /// reasoning as for public keys.
    public static let ciphertextByteCountMax = 4_096

    /// Frames an in-memory link holds in one direction before a send waits: enough for a handshake and a
    /// burst of records, and small enough that a test that forgets to read fails fast rather than growing.
    public static let memoryQueueFrameCountMax = 64

    /// Frames an in-memory link remembers per direction for tests to inspect: a handshake and its first
    /// records. Without a bound, a long benchmark would keep every record it ever sent.
    public static let memoryLogFrameCountMax = 32

    /// Connections a TCP listener lets the kernel queue before accepting. A receiver accepts at once and
    /// applies its own caps (below), so the queue only has to absorb a burst between two accepts.
    public static let listenBacklogCountMax = 64

    // MARK: A receiver that serves until stopped (docs/THREAT-MODEL.md, "A receiver under attack")

    /// Handshakes a receiver runs at once. A handshake is two X-Wing key generations and decapsulations
    /// (about 1 ms of work) and a few KiB of state; sixteen outlast any honest burst of payers at one counter,
    /// and when a seventeenth comes, the oldest handshake (always waiting on its peer) is dropped.
    public static let listenerHandshakeCountMax = 16

    /// Sessions past the handshake a receiver keeps at once. One person approves one prompt at a time, so
    /// more than a few live sessions only wait; eight is a queue at a market stall. When a ninth comes, the
    /// oldest session waiting on its peer is dropped; one waiting on our own person never is.
    public static let listenerSessionCountMax = 8

    /// Handshakes and sessions one source address may hold at once: one attacker's address cannot fill the
    /// caps alone, while a few wallets behind one NAT still pay side by side.
    public static let listenerPerSourceCountMax = 4

    /// How long a session may live after its handshake, start to end: the peer session's own waits (hello
    /// 10 s, decision 30 s, ranging 20 s, a few 15 s steps) add up to under two minutes; three minutes frees
    /// a slot held by a peer that answers each wait just in time.
    public static let listenerSessionTimeoutSeconds = 180.0

    /// How long a stopping receiver (SIGINT, SIGTERM, or its --count reached) waits for its live sessions
    /// to end: the 60 s PIN hold plus one 15 s step, so a session past its approval finishes its credit.
    public static let listenerDrainTimeoutSeconds = 75.0
}
