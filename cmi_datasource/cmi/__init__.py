"""SAS Common Messaging Interface: attachment headers and assembly of physical messages."""
