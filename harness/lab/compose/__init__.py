"""The docker backend: a drill's topology rendered as a Compose project, run with ``docker compose``.

``spec`` is the Compose file as data (pure), ``lab`` renders brokers and Toxiproxy into it,
``chaos`` renders the quickstart lab as ``docker-compose.chaos.yml``, ``project`` runs a
rendered project and removes it, ``container`` makes one container look like a supervised
process, and ``backend`` is what the environment asks for its brokers and proxies.
"""
