"""acme-billing: invoicing, PDF rendering and tax (a stand-in project for the my-agent-core demo)."""
