import SecureTestSupport
import Testing

/// `secure evidence verify` takes type 7 evidence (docs/CLEARING.md §2.5) through `ForkEvidence.decode`: the
/// stored vectors exit 0 when proven and 7 when not, with the reason code.
@Suite("secure evidence verify: type 7")
struct EvidenceType7CLITests {
    @Test func storedVectors() throws {
        let directory = Run.projectRoot + "/Tests/SecureCoreTests/Vectors/evidence-type7/"
        for (name, status, code) in [
            ("hidden-debit", Int32(0), "balance-mismatch"), ("forged-deposit", 0, "statement-invalid"),
            ("honest", 7, "no-conflict"), ("unclaimed-opaque", 7, "claim-missing"),
        ] {
            let result = try Run.program(Run.secure, ["evidence", "verify", directory + name + ".bin"])
            #expect(result.status == status, "\(name): \(result.output) \(result.stderr)")
            #expect((result.output + result.stderr).contains(code), "\(name): \(result.output) \(result.stderr)")
        }
    }
}
