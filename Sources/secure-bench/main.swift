// `secure-bench`: every benchmark of the secure wallet (SecureBench), outside the wallet's binary.
//
//     secure-bench sign | kem | channel | pay | ledger [OPTIONS]     `secure-bench --help` lists the options
//     secure-bench fixtures verify DIR COUNT
//
// `fixtures verify` builds the ledger benchmark's verification fixture with the test-only software signer
// (SecureTestSupport), which only this executable links; `secure-bench ledger` runs it in a process of its
// own when its cache lacks the fixture.
import Foundation
import SecureBench
import SecureToken

let words = Array(CommandLine.arguments.dropFirst())
if words.first == "fixtures" {
    let arguments = words.dropFirst()
    guard arguments.count == 3, arguments.first == "verify", let count = Int(arguments.last!), count >= 3,
        count <= 10_000_000
    else {
        FileHandle.standardError.write(
            Data("usage: secure-bench fixtures verify DIR COUNT (3 ≤ COUNT ≤ 10000000)\n".utf8))
        exit(2)
    }
    do {
        try VerifyFixture.build(directory: Array(arguments)[1], count: count)
    } catch {
        FileHandle.standardError.write(Data("secure-bench fixtures: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
let code = BenchCommands.run(words)
TokenLibrary.shared.shutdown()
exit(code)
