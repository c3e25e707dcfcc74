/// Which network addresses a webhook may reach: public unicast only, unless the operator allows private ones
/// (`LIVERELAY_WEBHOOK_ALLOW_PRIVATE=true`). Pure: the caller resolves the host.
public enum AddressPolicy {
    /// Why an address is refused (loopback, private, link-local, …), or nil for a public unicast address.
    /// - Parameter bytes: 4 bytes (IPv4) or 16 (IPv6), network order.
    public static func refusal(of bytes: [UInt8]) -> String? {
        switch bytes.count {
        case 4: return refusalIPv4(bytes)
        case 16: return refusalIPv6(bytes)
        default: return "not an IP address"
        }
    }

    private static func refusalIPv4(_ b: [UInt8]) -> String? {
        switch (b[0], b[1]) {
        case (0, _): return "unspecified (0.0.0.0/8)"
        case (127, _): return "loopback"
        case (10, _), (172, 16...31), (192, 168): return "private"
        case (100, 64...127): return "shared address space (100.64.0.0/10)"
        case (169, 254): return "link-local"
        case (192, 0) where b[2] == 0: return "reserved for protocols (192.0.0.0/24)"
        case (198, 18...19): return "reserved for benchmarks (198.18.0.0/15)"
        case (224...239, _): return "multicast"
        case (240...255, _): return "reserved (240.0.0.0/4)"
        default: return nil
        }
    }

    private static func refusalIPv6(_ b: [UInt8]) -> String? {
        if b.dropLast().allSatisfy({ $0 == 0 }) {
            if b[15] == 1 { return "loopback" }
            if b[15] == 0 { return "unspecified" }
        }
        // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible addresses are judged as the IPv4 address they carry.
        if b[0..<10].allSatisfy({ $0 == 0 }) && ((b[10] == 0xff && b[11] == 0xff) || (b[10] == 0 && b[11] == 0)) {
            return refusalIPv4(Array(b[12..<16]))
        }
        if b[0] & 0xfe == 0xfc { return "private (unique local, fc00::/7)" }
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return "link-local" }
        if b[0] == 0xfe && b[1] & 0xc0 == 0xc0 { return "site-local" }
        if b[0] == 0xff { return "multicast" }
        // NAT64 (64:ff9b::/96) carries an IPv4 address too.
        if b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4..<12].allSatisfy({ $0 == 0 }) {
            return refusalIPv4(Array(b[12..<16]))
        }
        return nil
    }
}
