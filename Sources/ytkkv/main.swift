#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

exit(Tool.run(Array(CommandLine.arguments.dropFirst()), output: Output()).code)
