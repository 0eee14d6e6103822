"""The seed catalogue's building blocks: data generators and files, models from small configs,
tokenizers, training loops and serving machinery that the subjects of each area are made of."""
