GlimpseLoadCommand.main()
