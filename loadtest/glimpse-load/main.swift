// Plain command lines skip ArgumentParser's start-up cost; anything else (and any option that fails
// validation) goes through ArgumentParser, which reports exactly as before.
if let options = FastArguments.parse(CommandLine.arguments.dropFirst()), (try? options.validate()) != nil {
    do { try options.run() } catch { GlimpseLoadCommand.exit(withError: error) }
} else {
    GlimpseLoadCommand.main()
}
