// Builds the fixtures of `secure bench ledger` that need the test-only software signer; `secure` runs it
// when its cache lacks one. It lives apart from `secure` because production code holds no software key.
//
//     secure-bench-fixtures verify DIR COUNT
import Foundation
import SecureTestSupport

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 3, arguments.first == "verify", let count = Int(arguments.last!), count >= 3, count <= 10_000_000 else {
    FileHandle.standardError.write(Data("usage: secure-bench-fixtures verify DIR COUNT (3 ≤ COUNT ≤ 10000000)\n".utf8))
    exit(64)
}
let directory = Array(arguments)[1]
do {
    try VerifyFixture.build(directory: directory, count: count)
} catch {
    FileHandle.standardError.write(Data("secure-bench-fixtures: \(error)\n".utf8))
    exit(1)
}
