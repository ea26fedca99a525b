"""The lab: brokers we start and teams' existing ones, the WAN links, Spark, Docker and Compose."""
